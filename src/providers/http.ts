/**
 * Upstream HTTP for every provider: one undici Agent (a keep-alive Pool per origin), a connect
 * timeout, a total timeout covering the whole call including a streamed body, and abort through
 * the caller's AbortSignal (client disconnect). API keys travel only in headers and never appear
 * in errors or logs.
 */
import { Agent, FormData, errors as undiciErrors, request } from 'undici';
import type { Dispatcher } from 'undici';
import { injectTraceContext } from '../telemetry/tracing';
import { deadline, releaseWithBody } from './deadline';
import { jsonRequestBody } from './json-body';
import { ProviderError, type ProviderFailure } from './types';
import type { FetchedAsset, NativeCall } from './shared/module';

export interface HttpTimeouts {
  connectMs: number;
  totalMs: number;
}

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
  /** The combined (caller + total timeout) signal; aborted when either fires. */
  signal: AbortSignal;
  /** Classifies an error thrown while reading the body (timeout vs abort vs network). */
  classify(err: unknown): ProviderFailure;
}

export interface HttpClient {
  send(url: string, call: NativeCall, authHeaders: Record<string, string>, signal?: AbortSignal): Promise<UpstreamResponse>;
  fetchAsset(url: string, mimeType?: string, signal?: AbortSignal): Promise<FetchedAsset>;
  close(): Promise<void>;
}

const MAX_ASSET_BYTES = 25 * 1024 * 1024;

export function createHttpClient(timeouts: HttpTimeouts): HttpClient {
  const agent = new Agent({
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 600_000,
    connections: 128,
    connect: { timeout: timeouts.connectMs },
    headersTimeout: timeouts.totalMs,
    bodyTimeout: timeouts.totalMs,
  });

  function signals(caller?: AbortSignal) {
    const d = deadline(timeouts.totalMs, caller);
    const combined = d.signal;
    const classify = (err: unknown): ProviderFailure => {
      if (caller?.aborted) return { kind: 'aborted', status: null, retryable: false, message: 'request aborted by the caller' };
      if (d.timedOut()) return { kind: 'timeout', status: null, retryable: true, message: `provider did not answer within ${timeouts.totalMs} ms` };
      if (err instanceof undiciErrors.ConnectTimeoutError) return { kind: 'timeout', status: null, retryable: true, message: `connect timeout after ${timeouts.connectMs} ms` };
      if (err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError) {
        return { kind: 'timeout', status: null, retryable: true, message: 'provider timed out' };
      }
      const code = (err as { code?: string })?.code;
      return { kind: 'network', status: null, retryable: true, message: `network error${code ? ` (${code})` : ''} talking to the provider` };
    };
    return { combined, classify, d };
  }

  return {
    async send(url, call, authHeaders, caller) {
      const { combined, classify, d } = signals(caller);
      const headers: Record<string, string> = { ...call.headers, ...authHeaders };
      let body: string | Buffer | FormData;
      if (call.bodyKind === 'multipart') body = call.body as FormData;
      else {
        headers['content-type'] = 'application/json';
        body = await jsonRequestBody(call.body);
      }
      if (call.responseKind === 'sse') headers.accept = 'text/event-stream';
      injectTraceContext(headers);
      try {
        const res = await request(url, { method: call.method, headers, body, signal: combined, dispatcher: agent });
        releaseWithBody(d, res.body);
        return { status: res.statusCode, headers: res.headers, body: res.body, signal: combined, classify };
      } catch (err) {
        d.release();
        throw new ProviderError(classify(err));
      }
    },

    async fetchAsset(url, mimeType, caller) {
      const filename = (() => {
        try {
          return decodeURIComponent(new URL(url).pathname.split('/').pop() || 'audio') || 'audio';
        } catch {
          return 'audio';
        }
      })();
      const dataUrl = /^data:([^;,]+)?(;base64)?,(.*)$/s.exec(url);
      if (dataUrl) {
        const data = dataUrl[2] ? Buffer.from(dataUrl[3], 'base64') : Buffer.from(decodeURIComponent(dataUrl[3]));
        return { data, mimeType: mimeType ?? dataUrl[1] ?? 'application/octet-stream', filename: 'audio' };
      }
      const { combined, classify, d } = signals(caller);
      let res: Dispatcher.ResponseData;
      try {
        res = await request(url, { method: 'GET', signal: combined, dispatcher: agent });
        releaseWithBody(d, res.body);
      } catch (err) {
        d.release();
        throw new ProviderError({ ...classify(err), message: 'could not fetch the input asset' });
      }
      if (res.statusCode >= 400) {
        await res.body.dump();
        throw new ProviderError({ kind: 'http_error', status: 400, retryable: false, message: `input asset URL answered HTTP ${res.statusCode}` });
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > MAX_ASSET_BYTES) {
          res.body.destroy();
          throw new ProviderError({ kind: 'http_error', status: 400, retryable: false, message: 'input asset exceeds 25 MB' });
        }
        chunks.push(chunk as Buffer);
      }
      const ct = String(res.headers['content-type'] ?? '').split(';')[0].trim();
      return { data: Buffer.concat(chunks), mimeType: mimeType ?? (ct || 'application/octet-stream'), filename };
    },

    close: () => agent.close(),
  };
}
