/**
 * The provider emulator: the five providers' native HTTP APIs, each under its own prefix
 * (`/openai/v1/...`, `/anthropic/v1/messages`, `/google/v1beta/models/{m}:...`, `/deepseek/...`,
 * `/mistral/v1/...`), with their real response shapes, SSE framing and error bodies. Output is
 * deterministic (derived from a hash of the input); token counts use the same tokenizer as
 * Tollgate's estimator. Fault controls: see ./faults.ts and README.md.
 *
 * This file is the HTTP server and the router: authentication, fault injection and the read-only
 * routes (./models.ts) for every provider, then the provider's own routes in ./providers/.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { providerModules } from '../src/providers';
import type { ProviderId } from '../src/providers/types';
import { pngFor } from './content';
import { parseFaults } from './faults';
import { delay, HttpFail, sendError, sendJson, type Ctx, type ProviderRoutes } from './http';
import { readRoute } from './models';
import { handlePayments } from './payments';
import { anthropicRoutes } from './providers/anthropic';
import { deepseekRoutes } from './providers/deepseek';
import { googleRoutes } from './providers/google';
import { mistralRoutes } from './providers/mistral';
import { openaiRoutes } from './providers/openai';

const ROUTES: Record<ProviderId, ProviderRoutes> = {
  openai: openaiRoutes,
  anthropic: anthropicRoutes,
  google: googleRoutes,
  deepseek: deepseekRoutes,
  mistral: mistralRoutes,
};

function hasKey(ctx: Ctx): boolean {
  const h = ctx.req.headers;
  const bearer = /^Bearer\s+\S+/i.test(String(h.authorization ?? ''));
  if (ctx.provider === 'anthropic') return Boolean(h['x-api-key']) || bearer;
  if (ctx.provider === 'google') return Boolean(h['x-goog-api-key']) || Boolean(ctx.query.get('key')) || bearer;
  return bearer;
}

/** Every user-visible text of the request (for markers and token counts). */
function textsOf(ctx: Ctx): string[] {
  if (ctx.body instanceof FormData) {
    const p = ctx.body.get('prompt');
    return typeof p === 'string' ? [p] : [];
  }
  return providerModules[ctx.provider].inspectableText(ctx.body);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** One provider request as the emulator received it (tests check what Tollgate sent upstream). */
export interface ReceivedRequest {
  provider: ProviderId;
  path: string;
  /** The parsed JSON body (null for multipart or unparseable bodies). */
  body: unknown;
  /** W3C trace context the caller propagated (tracing tests), null when none. */
  traceparent: string | null;
}

async function handle(req: IncomingMessage, res: ServerResponse, baseUrl: () => string, received: (r: ReceivedRequest) => void) {
  const url = new URL(req.url ?? '/', 'http://emulator');
  if (req.method === 'GET' && url.pathname === '/health') return sendJson(res, 200, { status: 'ok', providers: Object.keys(providerModules) });
  if (req.method === 'GET' && url.pathname.startsWith('/assets/')) {
    // Test assets: /assets/image/<id>.png (generated images), /assets/echo?text=...&type=... (any bytes).
    if (url.pathname.startsWith('/assets/image/')) {
      const png = pngFor(url.pathname);
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
      return res.end(png);
    }
    const data = Buffer.from(url.searchParams.get('text') ?? '', 'utf8');
    res.writeHead(200, { 'content-type': url.searchParams.get('type') ?? 'application/octet-stream', 'content-length': data.length });
    return res.end(data);
  }
  if (await handlePayments(req, res, url, baseUrl())) return;
  const m = /^\/(openai|anthropic|google|deepseek|mistral)(\/.*)$/.exec(url.pathname);
  if (!m) return sendJson(res, 404, { error: { message: `no emulated provider at ${url.pathname}` } });
  const ctx: Ctx = { req, res, provider: m[1] as ProviderId, path: m[2].replace(/\/+$/, ''), query: url.searchParams, raw: Buffer.alloc(0), body: null, baseUrl: baseUrl() };
  try {
    if (req.method !== 'POST' && req.method !== 'GET') throw new HttpFail(404, `Unknown route ${req.method} ${ctx.path}`);
    ctx.raw = req.method === 'POST' ? await readBody(req) : Buffer.alloc(0);
    if (!hasKey(ctx)) {
      const msg = ctx.provider === 'google' ? 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.' : 'Missing API key';
      return sendError(ctx, 401, ctx.provider === 'anthropic' ? 'x-api-key header is required' : msg);
    }
    // Read-only routes: model lists and details, token counting (./models.ts).
    let readBodyJson: Record<string, unknown> | null = null;
    if (req.method === 'POST' && ctx.raw.length) {
      try {
        readBodyJson = JSON.parse(ctx.raw.toString('utf8')) as Record<string, unknown>;
      } catch {
        readBodyJson = null;
      }
    }
    const read = readRoute(ctx.provider, req.method, ctx.path, readBodyJson);
    if (read) {
      if (read.status === 404) return sendError(ctx, 404, `The model \`${ctx.path.split('/').pop()}\` does not exist`);
      return sendJson(res, read.status, read.body);
    }
    if (req.method !== 'POST') throw new HttpFail(404, `Unknown route ${req.method} ${ctx.path}`);
    const ct = String(req.headers['content-type'] ?? '');
    if (ct.startsWith('multipart/form-data')) {
      ctx.body = await new Response(ctx.raw, { headers: { 'content-type': ct } }).formData();
    } else {
      try {
        ctx.body = ctx.raw.length ? JSON.parse(ctx.raw.toString('utf8')) : {};
      } catch {
        throw new HttpFail(400, 'We could not parse the JSON body of your request.');
      }
    }
    received({ provider: ctx.provider, path: ctx.path, body: ctx.body instanceof FormData ? null : ctx.body, traceparent: typeof req.headers.traceparent === 'string' ? req.headers.traceparent : null });
    const faults = parseFaults(req.headers, textsOf(ctx));
    if (faults.latencyMs) await delay(ctx, faults.latencyMs);
    if (faults.status && faults.status >= 400) {
      const msg = faults.status === 429 ? 'Rate limit exceeded (emulated)' : faults.status === 529 ? 'Overloaded' : `Emulated error ${faults.status}`;
      return sendError(ctx, faults.status, msg, faults);
    }
    const streaming = ctx.body?.stream === true || ctx.path.endsWith(':streamGenerateContent');
    if (faults.malformed && !streaming) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end('{"id": "emulated", "choices": [{"message": ');
    }
    if (!streaming && faults.ttftMs) await delay(ctx, faults.ttftMs);
    await ROUTES[ctx.provider](ctx, faults);
  } catch (err) {
    if (res.headersSent || ctx.hangUp?.aborted) {
      res.destroy();
      return;
    }
    if (err instanceof HttpFail) return sendError(ctx, err.status, err.message);
    sendError(ctx, 500, 'emulator internal error');
  }
}

export interface EmulatorHandle {
  url: string;
  /** Requests received so far (tests count provider calls with it). */
  requestCount(): number;
  /** Requests whose handling has not ended (waiting out a delay, or streaming). */
  inProgress(): number;
  /** The last RECEIVED_LOG_SIZE governed provider requests (POST bodies), oldest first. */
  received(): ReceivedRequest[];
  close(): Promise<void>;
}

const RECEIVED_LOG_SIZE = 2000;

export async function startEmulator(opts: { port?: number; host?: string } = {}): Promise<EmulatorHandle> {
  const host = opts.host ?? '127.0.0.1';
  let url = '';
  let requests = 0;
  let inProgress = 0;
  const log: ReceivedRequest[] = [];
  const server = http.createServer((req, res) => {
    requests += 1;
    inProgress += 1;
    handle(req, res, () => url, (r) => {
      log.push(r);
      if (log.length > RECEIVED_LOG_SIZE) log.shift();
    })
      .catch(() => res.destroy())
      .finally(() => (inProgress -= 1));
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  url = `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${addr.port}`;
  return {
    url,
    requestCount: () => requests,
    inProgress: () => inProgress,
    received: () => [...log],
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
