/** A proxy request as the HTTP side hands it over: its body parsed, the idempotency hash of what it asks, and the routing headers (openai and anthropic proxies). */
import { setImmediate as turn } from 'node:timers/promises';
import { createHash } from 'node:crypto';
import type { AuthContext } from '../auth-context';
import { jsonDepth, MAX_JSON_DEPTH } from '../json-depth';
import type { ProviderId } from '../config';
import type { Target } from '../executions/types';
import { multipartFields, type ParsedBody, type ProxyCall } from './infer';
import { ProxyError } from './native-errors';
import { ROUTABLE_PROVIDERS } from './deps';
import { sha256InSlices } from '../payload-hash';
import { decodeUtf8 } from '../utf8';


/** Request headers as the HTTP side hands them over: names in lower case. */
export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** One header's value, '' when absent. */
export function headerOf(headers: RequestHeaders, name: string): string {
  const v = headers[name];
  return Array.isArray(v) ? v.join(', ') : v ?? '';
}

/**
 * A proxy request as the HTTP side hands it over: plain values, and the two steps that read the
 * connection (run by the proxy in its own order, so their refusals come in the order callers see).
 */
export interface ProxyRequest {
  method: string;
  /** The path below /v1/proxy/{provider}, as the provider's SDK sent it. */
  nativePath: string;
  /** The query string without its "?" (the caller's `key` parameter included). */
  querystring: string;
  headers: RequestHeaders;
  /** The project key where the provider's SDK sends it; refusals are thrown as ProxyErrors. */
  authenticate(): Promise<AuthContext>;
  /** The raw body, or null once it grows past `limit` bytes (the rest is left unread). */
  readBody(limit: number): Promise<Buffer | null>;
}

/** The body of a governed call, read within the body limit. */
export async function readCallBody(request: ProxyRequest, limit: number): Promise<Buffer> {
  const raw = await request.readBody(limit);
  if (!raw) throw new ProxyError(413, 'payload_too_large', `The request body exceeds ${limit} bytes`);
  return raw;
}

/** Bodies above this size are decoded and parsed in turns of their own. */
const TURN_ABOVE_BYTES = 256 * 1024;

export async function parseBody(raw: Buffer, contentType: string): Promise<ParsedBody> {
  if (/^multipart\/form-data/i.test(contentType)) {
    try {
      return { kind: 'multipart', raw, contentType, json: await multipartFields(raw, contentType) };
    } catch {
      throw new ProxyError(400, 'invalid_multipart', 'The multipart body could not be parsed');
    }
  }
  if (raw.length && !/json/i.test(contentType) && contentType) {
    throw new ProxyError(415, 'unsupported_media_type', 'Send the native request as JSON (or multipart/form-data where the provider takes it)');
  }
  let json: unknown;
  try {
    // The decode and the parse each in a turn of their own (the read's join ends the one before):
    // at the body limit each holds the event loop for every other request.
    if (raw.length) {
      if (raw.length > TURN_ABOVE_BYTES) await turn();
      const text = decodeUtf8(raw);
      if (raw.length > TURN_ABOVE_BYTES) await turn();
      json = JSON.parse(text);
    } else json = {};
  } catch {
    throw new ProxyError(400, 'invalid_json', 'The request body is not valid JSON');
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) throw new ProxyError(400, 'invalid_json', 'The request body must be a JSON object');
  if (jsonDepth(json) > MAX_JSON_DEPTH) throw new ProxyError(400, 'invalid_json', `The request body nests deeper than ${MAX_JSON_DEPTH} levels`);
  return { kind: 'json', raw, contentType, json: json as Record<string, unknown> };
}

/** Multipart boundaries are random per request: hash the body with its boundary normalized. A JSON body is hashed in slices (src/payload-hash.ts). */
export async function payloadHash(provider: ProviderId, path: string, body: ParsedBody, routingHeaders: Record<string, string>): Promise<string> {
  const prefix = `${provider}\n${path}\n${JSON.stringify(routingHeaders)}\n`;
  if (body.kind !== 'multipart') return sha256InSlices(prefix, body.raw);
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(body.contentType);
  const b = boundary ? (boundary[1] ?? boundary[2]).trim() : '';
  return createHash('sha256').update(prefix).update(b ? body.raw.toString('latin1').split(b).join('BOUNDARY') : body.raw.toString('latin1')).digest('hex');
}


export function parseTarget(spec: string, where: string): Target {
  const m = /^\s*(openai|anthropic)\s*[:/]\s*(\S+)\s*$/.exec(spec);
  if (!m) throw new ProxyError(400, 'invalid_routing', `${where}: "${spec}" is not "<provider>:<model>" with provider openai or anthropic`);
  return { provider: m[1] as ProviderId, model: m[2] };
}

export interface RoutingPlan {
  primary: Target;
  fallback: Target[];
  reason: 'explicit_request';
  requested: { provider: ProviderId; model: string };
  headers: Record<string, string>;
}

export function planRouting(requestHeaders: RequestHeaders, call: ProxyCall): RoutingPlan {
  const tp = headerOf(requestHeaders, 'x-svc-target-provider').trim();
  const tm = headerOf(requestHeaders, 'x-svc-target-model').trim();
  const chain = headerOf(requestHeaders, 'x-svc-fallback-chain').trim();
  const headers: Record<string, string> = {};
  if (tp) headers.provider = tp;
  if (tm) headers.model = tm;
  if (chain) headers.chain = chain;
  const requested = { provider: call.provider, model: call.model };
  if (!tp && !tm && !chain) return { primary: requested, fallback: [], reason: 'explicit_request', requested, headers };
  if (!ROUTABLE_PROVIDERS.includes(call.provider)) {
    throw new ProxyError(400, 'routing_not_supported', `Routing headers are supported on the openai and anthropic proxies only, not on ${call.provider}`);
  }
  if (!call.chat) throw new ProxyError(400, 'routing_not_supported', 'Routing headers apply to chat requests only');
  let primary = requested;
  if (tp || tm) {
    if (tp && !ROUTABLE_PROVIDERS.includes(tp as ProviderId)) throw new ProxyError(400, 'invalid_routing', 'x-svc-target-provider must be openai or anthropic');
    const provider = (tp || call.provider) as ProviderId;
    if (provider !== call.provider && !tm) throw new ProxyError(400, 'invalid_routing', 'x-svc-target-model is required when x-svc-target-provider names another provider');
    primary = { provider, model: tm || call.model };
  }
  const fallback = chain
    ? chain
        .split(',')
        .filter((s) => s.trim())
        .map((s) => parseTarget(s, 'x-svc-fallback-chain'))
        .filter((t) => !(t.provider === primary.provider && t.model === primary.model))
    : [];
  const crossProvider = [primary, ...fallback].some((t) => t.provider !== call.provider);
  if (call.stream && (crossProvider || fallback.length)) {
    throw new ProxyError(400, 'routing_not_supported', 'Cross-provider targets and fallback chains are non-stream only; send the request without "stream": true');
  }
  return { primary, fallback, reason: 'explicit_request', requested, headers };
}

