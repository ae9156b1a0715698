/**
 * The provider gateway: picks the provider module, builds the native call, sends it over the
 * shared undici agent, and turns the answer (JSON, bytes or an SSE stream) into a ProviderResult
 * or a ProviderError. Accounting is never lost: a stream that ends without usage resolves with
 * tokenizer-estimated usage (`estimated: true`); a stream that breaks rejects with
 * `stream_broken` and estimated `partialUsage`.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { Config } from '../config';
import { createHttpClient, type HttpClient, type UpstreamResponse } from './http';
import { anthropic } from './anthropic';
import { deepseek } from './deepseek';
import { google } from './google';
import { mistral } from './mistral';
import { openai } from './openai';
import { StreamErrorEvent, type NativeCall, type ProviderModule, type SseEvent } from './shared/module';
import { estimatedUsage, makeUsage } from './shared/usage';
import {
  ProviderError,
  supportsOperation,
  type DispatchOptions,
  type NormalizedRequest,
  type ProviderGateway,
  type ProviderId,
  type ProviderResult,
} from './types';

export type { ProviderModule, NativeCall, SseEvent, StreamParser, StreamSnapshot, BuildContext, FetchedAsset, NativeAnswer, AnswerToolCall } from './shared/module';
export { makeUsage, estimatedUsage, estimateInputTokens, requestTexts } from './shared/usage';
export { classifyHttpFailure, retryAfterSeconds } from './shared/errors';

/** Per-provider modules, for the proxy routes to reuse piece by piece. */
export const providerModules: Record<ProviderId, ProviderModule> = { openai, anthropic, google, deepseek, mistral };

export interface ProviderGatewayWithClose extends ProviderGateway {
  /** Closes the keep-alive pools. */
  close(): Promise<void>;
}

async function readAll(res: UpstreamResponse): Promise<Buffer> {
  const chunks: Buffer[] = [];
  try {
    for await (const c of res.body) chunks.push(c as Buffer);
  } catch (err) {
    throw new ProviderError(res.classify(err));
  }
  return Buffer.concat(chunks);
}

function parseJsonLoose(buf: Buffer): unknown {
  const text = buf.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const header = (res: UpstreamResponse, name: string) => {
  const v = res.headers[name];
  return String(Array.isArray(v) ? v[0] : v ?? '');
};

async function failFromStatus(mod: ProviderModule, res: UpstreamResponse, partial?: ProviderResult['usage']): Promise<never> {
  const body = parseJsonLoose(await readAll(res));
  throw new ProviderError(mod.mapError(res.status, body, res.headers), partial);
}

async function consumeStream(mod: ProviderModule, req: NormalizedRequest, res: UpstreamResponse, opts: DispatchOptions): Promise<ProviderResult> {
  const parser = mod.createStreamParser(req);
  let text = '';
  const queue: SseEvent[] = [];
  const sse = createParser({ onEvent: (e: EventSourceMessage) => queue.push({ event: e.event, data: e.data }) });
  const decoder = new TextDecoder();
  const partial = () => {
    const snap = parser.snapshot();
    return estimatedUsage(req, text, snap.usage);
  };
  const drain = () => {
    while (queue.length) {
      for (const d of parser.push(queue.shift()!)) {
        text += d;
        opts.onDelta?.(d);
      }
    }
  };
  try {
    for await (const chunk of res.body) {
      sse.feed(decoder.decode(chunk as Buffer, { stream: true }));
      drain();
    }
    sse.feed(decoder.decode());
    drain();
  } catch (err) {
    if (err instanceof ProviderError) throw new ProviderError(err.failure, partial());
    if (err instanceof StreamErrorEvent) {
      const failure = mod.mapError(err.status ?? 500, err.native);
      throw new ProviderError({ ...failure, kind: failure.kind === 'http_error' ? 'stream_broken' : failure.kind, status: err.status, retryable: true }, partial());
    }
    const f = res.classify(err);
    throw new ProviderError(
      f.kind === 'network' ? { ...f, kind: 'stream_broken', message: 'provider stream broke before it finished' } : f,
      partial(),
    );
  }
  const snap = parser.snapshot();
  if (!snap.done) {
    throw new ProviderError(
      { kind: 'stream_broken', status: res.status, retryable: true, message: 'provider stream ended before its final event' },
      partial(),
    );
  }
  return {
    output: { content: [{ type: 'text', role: 'assistant', text }] },
    output_assets: [],
    usage: snap.usage ? makeUsage(snap.usage) : estimatedUsage(req, text),
    provider_model: snap.model ?? undefined,
    finish_reason: snap.finish_reason,
  };
}

/** Sends one normalized request through a provider module to its endpoint. */
async function dispatchWith(
  http: HttpClient,
  to: { mod: ProviderModule; baseUrl: string; apiKey: string },
  req: NormalizedRequest,
  opts: DispatchOptions = {},
): Promise<ProviderResult> {
  const { mod, baseUrl, apiKey } = to;
  const call: NativeCall = await mod.buildRequest(req, { fetchAsset: (url, mime) => http.fetchAsset(url, mime, opts.signal) });
  const res = await http.send(baseUrl.replace(/\/+$/, '') + call.path, call, mod.authHeaders(apiKey), opts.signal);
  if (res.status >= 400) return failFromStatus(mod, res);
  if (call.responseKind === 'sse') {
    if (!header(res, 'content-type').includes('text/event-stream')) {
      const body = parseJsonLoose(await readAll(res));
      throw new ProviderError({ kind: 'malformed_response', status: res.status, retryable: true, message: 'expected an event stream', native: body }, estimatedUsage(req, ''));
    }
    return consumeStream(mod, req, res, opts);
  }
  const buf = await readAll(res);
  if (call.responseKind === 'binary') return mod.parseResponse(req, call, buf, header(res, 'content-type'));
  let payload: unknown;
  try {
    payload = JSON.parse(buf.toString('utf8'));
  } catch {
    throw new ProviderError(
      { kind: 'malformed_response', status: res.status, retryable: true, message: 'provider response is not valid JSON', native: buf.toString('utf8').slice(0, 2000) },
      estimatedUsage(req, ''),
    );
  }
  try {
    return mod.parseResponse(req, call, payload, header(res, 'content-type'));
  } catch (err) {
    if (err instanceof ProviderError && !err.partialUsage) throw new ProviderError(err.failure, estimatedUsage(req, ''));
    throw err;
  }
}

export function createProviderGateway(config: Pick<Config, 'providers' | 'providerTimeouts'>): ProviderGatewayWithClose {
  const http = createHttpClient(config.providerTimeouts);
  return {
    async dispatch(req, opts = {}) {
      if (!supportsOperation(req.provider, req.operation)) {
        throw new ProviderError({ kind: 'http_error', status: 400, retryable: false, message: `operation ${req.operation} is not supported by provider ${req.provider}` });
      }
      const endpoint = config.providers[req.provider];
      const apiKey = opts.credentials?.apiKey ?? endpoint?.apiKey;
      const baseUrl = opts.credentials?.baseUrl ?? endpoint?.baseUrl;
      if (!apiKey || !baseUrl) {
        throw new ProviderError({ kind: 'http_error', status: null, retryable: false, message: `provider ${req.provider} has no API key configured` });
      }
      return dispatchWith(http, { mod: providerModules[req.provider], baseUrl, apiKey }, req, opts);
    },
    close: () => http.close(),
  };
}
