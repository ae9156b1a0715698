/**
 * Read-only provider routes the official SDKs call beside the governed ones: model lists and
 * model details, token counting (Anthropic `count_tokens`, Gemini `countTokens`), and OpenAI's
 * stored responses (read, input items, delete). They cost
 * nothing at the provider, so they are not governed: no permit, no reservation, no timeline. They
 * are authenticated with the project key like every proxy call, count against the project's
 * request rate limits, are forwarded with Tollgate's managed key, answered with the provider's
 * bytes, and counted per provider and route in `tollgate_proxy_reads_total`. Every other path stays a native 404 (docs/decisions/proxies.md).
 */
import { Counter, type Registry } from 'prom-client';
import type { ProviderId } from '../config';
import { consumeReadRate } from '../db/repositories/spend';
import { nativeErrorBody, ProxyError } from './native-errors';
import type { ProxyDeps } from './deps';
import { proxyErrorReply, type Reply } from './reply';
import type { ProxyRequest } from './request';
import { forwardRequestHeaders, passBackHeaders } from './upstream';
import { deadline, releaseWithBody } from '../providers/deadline';

interface ReadRoute {
  method: 'GET' | 'POST' | 'DELETE';
  pattern: RegExp;
  /** The route template, for metrics. */
  name: string;
}

const MODEL_ID = '[^/]+';
export const READ_ROUTES: Record<ProviderId, ReadRoute[]> = {
  openai: [
    { method: 'GET', pattern: /^\/v1\/models$/, name: 'GET /v1/models' },
    { method: 'GET', pattern: new RegExp(`^/v1/models/${MODEL_ID}$`), name: 'GET /v1/models/{model}' },
    // Stored Responses API objects: reads and deletes of what an earlier governed call created.
    { method: 'GET', pattern: /^\/v1\/responses\/[^/]+$/, name: 'GET /v1/responses/{id}' },
    { method: 'GET', pattern: /^\/v1\/responses\/[^/]+\/input_items$/, name: 'GET /v1/responses/{id}/input_items' },
    { method: 'DELETE', pattern: /^\/v1\/responses\/[^/]+$/, name: 'DELETE /v1/responses/{id}' },
  ],
  deepseek: [
    { method: 'GET', pattern: /^\/(v1\/)?models$/, name: 'GET /models' },
    { method: 'GET', pattern: new RegExp(`^/(v1/)?models/${MODEL_ID}$`), name: 'GET /models/{model}' },
  ],
  mistral: [
    { method: 'GET', pattern: /^\/v1\/models$/, name: 'GET /v1/models' },
    { method: 'GET', pattern: new RegExp(`^/v1/models/${MODEL_ID}$`), name: 'GET /v1/models/{model}' },
  ],
  anthropic: [
    { method: 'GET', pattern: /^\/v1\/models$/, name: 'GET /v1/models' },
    { method: 'GET', pattern: new RegExp(`^/v1/models/${MODEL_ID}$`), name: 'GET /v1/models/{model}' },
    { method: 'POST', pattern: /^\/v1\/messages\/count_tokens$/, name: 'POST /v1/messages/count_tokens' },
  ],
  google: [
    { method: 'GET', pattern: /^\/(v1beta|v1)\/models$/, name: 'GET /v1beta/models' },
    { method: 'GET', pattern: /^\/(v1beta|v1)\/models\/[^/:]+$/, name: 'GET /v1beta/models/{model}' },
    { method: 'POST', pattern: /^\/(v1beta|v1)\/models\/[^/:]+:countTokens$/, name: 'POST /v1beta/models/{model}:countTokens' },
  ],
};

export function readRouteOf(provider: ProviderId, method: string, nativePath: string): ReadRoute | null {
  const pathname = nativePath.split('?')[0].replace(/\/+$/, '');
  return READ_ROUTES[provider].find((r) => r.method === method && r.pattern.test(pathname)) ?? null;
}

export function createReadCounter(registry: Registry): Counter<'provider' | 'route' | 'status'> {
  return new Counter({
    name: 'tollgate_proxy_reads_total',
    help: 'Ungoverned provider reads (model lists, token counting) through the proxies',
    labelNames: ['provider', 'route', 'status'],
    registers: [registry],
  });
}

const READ_BODY_LIMIT = 1024 * 1024;

async function readBody(request: ProxyRequest): Promise<Buffer> {
  const raw = await request.readBody(READ_BODY_LIMIT);
  if (!raw) throw new ProxyError(413, 'payload_too_large', `A token-counting body is limited to ${READ_BODY_LIMIT} bytes`);
  return raw;
}

/** A read route's answer: the provider's bytes, or a native error. */
export async function handleProxyRead(
  deps: ProxyDeps,
  counter: Counter<'provider' | 'route' | 'status'>,
  read: { provider: ProviderId; route: ReadRoute },
  request: ProxyRequest,
): Promise<Reply> {
  const { provider, route } = read;
  const { nativePath } = request;
  try {
    const auth = await request.authenticate();
    // Reads count against the project's request rate limits, like every governed call.
    const rate = await consumeReadRate(deps.db, auth.projectId, deps.clock.now());
    if (!rate.ok) {
      const status = rate.action === 'deny' ? 403 : 429;
      const code = rate.action === 'deny' ? 'budget.rate_limit_exceeded' : 'budget.rate_limit_throttled';
      throw new ProxyError(status, code, `Rate limit ${rate.limit_id} (${rate.limit} requests per ${rate.window_seconds} s) reached`, { headers: status === 429 ? { 'retry-after': String(rate.retry_after_seconds) } : {} });
    }
    const endpoint = deps.config.providers[provider];
    if (!endpoint?.apiKey || !endpoint.baseUrl) throw new ProxyError(502, 'provider_not_configured', `provider ${provider} has no API key configured`);
    const query = new URLSearchParams(request.querystring);
    query.delete('key');
    const qs = query.toString();
    const body = route.method === 'POST' ? await readBody(request) : undefined;
    let res;
    const d = deadline(deps.config.providerTimeouts.totalMs);
    try {
      res = await deps.upstream.send({
        provider,
        baseUrl: endpoint.baseUrl,
        apiKey: endpoint.apiKey,
        path: nativePath + (qs ? `?${qs}` : ''),
        headers: forwardRequestHeaders(request.headers),
        body,
        method: route.method,
        signal: d.signal,
      });
      releaseWithBody(d, res.body);
    } catch (err) {
      d.release();
      throw new ProxyError(502, 'upstream_unreachable', `The provider could not be reached: ${err instanceof Error ? err.message : String(err)}`);
    }
    const bytes = Buffer.from(await res.body.arrayBuffer());
    counter.inc({ provider, route: route.name, status: String(res.statusCode) });
    return { status: res.statusCode, headers: passBackHeaders(res.headers), body: bytes };
  } catch (err) {
    const e = err instanceof ProxyError ? err : new ProxyError(500, 'internal_error', 'An internal error occurred; retry later');
    if (!(err instanceof ProxyError)) deps.logger.error({ err, provider }, 'proxy read failed');
    counter.inc({ provider, route: route.name, status: String(e.status) });
    return proxyErrorReply(provider, e);
  }
}

/** A native 404 for a path the proxy neither governs nor reads. */
export function unsupportedPath(provider: ProviderId, method: string, nativePath: string): Reply {
  return { status: 404, headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify(nativeErrorBody(provider, { status: 404, code: 'unsupported_proxy_path', message: `${method} ${nativePath.split('?')[0]} is not a ${provider} endpoint the Tollgate proxy serves` }))) };
}
