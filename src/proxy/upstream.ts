/**
 * Byte-for-byte forwarding of a native request to the provider: the caller's body (JSON or
 * multipart) is sent unchanged except for credentials (Tollgate's managed key replaces the
 * caller's) and hop-by-hop headers. One undici Agent per API process (keep-alive pools per origin).
 */
import { Agent, request, type Dispatcher } from 'undici';
import { injectTraceContext } from '../telemetry/tracing';
import type { ProviderId } from '../config';
import { providerModules } from '../providers';

/** Request headers never forwarded upstream (credentials, hop-by-hop, Tollgate controls). */
const DROP_REQUEST = new Set([
  'host',
  'authorization',
  'x-api-key',
  'x-goog-api-key',
  'content-length',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'proxy-authorization',
  'accept-encoding',
  'cookie',
  'idempotency-key',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
]);

/** Response headers not passed back (hop-by-hop; the body is re-framed by Node). */
const DROP_RESPONSE = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding', 'set-cookie', 'date', 'server']);

export function forwardRequestHeaders(incoming: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(incoming)) {
    const name = k.toLowerCase();
    if (v === undefined || DROP_REQUEST.has(name) || name.startsWith('x-svc-')) continue;
    out[name] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

export function passBackHeaders(upstream: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(upstream)) {
    const name = k.toLowerCase();
    if (v === undefined || DROP_RESPONSE.has(name)) continue;
    out[name] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

export interface UpstreamClient {
  send(input: { provider: ProviderId; baseUrl: string; apiKey: string; path: string; headers: Record<string, string>; body?: Buffer; signal: AbortSignal; method?: 'GET' | 'POST' | 'DELETE' }): Promise<Dispatcher.ResponseData>;
  close(): Promise<void>;
}

export function createUpstreamClient(timeouts: { connectMs: number; totalMs: number }): UpstreamClient {
  const agent = new Agent({
    keepAliveTimeout: 30_000,
    connections: 128,
    connect: { timeout: timeouts.connectMs },
    headersTimeout: timeouts.totalMs,
    bodyTimeout: timeouts.totalMs,
  });
  return {
    send({ provider, baseUrl, apiKey, path, headers, body, signal, method = 'POST' }) {
      const h: Record<string, string> = { ...headers, ...providerModules[provider].authHeaders(apiKey) };
      injectTraceContext(h);
      return request(baseUrl.replace(/\/+$/, '') + path, { method, headers: h, body: method === 'POST' ? body : undefined, signal, dispatcher: agent });
    },
    close: () => agent.close(),
  };
}
