/**
 * One dispatch attempt of a proxy call: the native body passed through byte for byte (a stream piped
 * back as it arrives, usage read on the way) or translated for a cross-provider target.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { Target } from '../executions/types';
import { providerModules, type NativeAnswer, type SseEvent } from '../providers';
import { estimatedUsage, makeUsage, requestTexts } from '../providers/shared/usage';
import { ProviderError, type NormalizedRequest, type ProviderFailure, type Usage } from '../providers/types';
import type { ParsedBody, ProxyCall } from './infer';
import { withNativeCeiling } from './native-ceiling';
import { nativeErrorBody } from './native-errors';
import { renderNative, translatedRequest } from './translate';
import { forwardRequestHeaders, passBackHeaders } from './upstream';
import { deadline, releaseWithBody } from '../providers/deadline';
import { jsonReply, type Reply } from './reply';
import type { ProxyDeps } from './deps';
import type { RequestHeaders } from './request';
import type { StreamSink } from './sink';

export interface Attempt {
  ok: boolean;
  failure?: ProviderFailure;
  partial?: Usage | null;
  /** A non-stream answer (native bytes) to return to the caller. */
  reply?: Reply;
  usage?: Usage;
  /** The model the provider reports having answered with (non-stream answers), for traces and metrics. */
  model?: string;
  /** Why the answer ended and the tool calls it carries, as the provider said (a successful answer). */
  answer?: NativeAnswer;
  /** A stream was piped to the caller (already responded). */
  streamed?: boolean;
  aborted?: boolean;
  /** Ends the piped stream; called after recording, so the record exists once the caller sees the end. */
  finish?: () => void;
  /** Set by the fallback engine's adapter: no other target after this one. */
  final?: boolean;
}


/** Usage of a non-stream native response; tokenizer estimate when the provider reports none. */
export function usageOfNative(call: ProxyCall, req: NormalizedRequest, json: unknown): Usage {
  const u = providerModules[call.provider].extractUsageFromNative(call.pathname, json);
  if (u) return u;
  if (call.operation === 'generate.audio') return makeUsage({ characters: requestTexts(req).join('\n').length });
  if (call.operation === 'embed.text') return { ...estimatedUsage(req, ''), output_tokens: 0 };
  return estimatedUsage(req, '');
}

export function failureOf(err: unknown, signal: AbortSignal): ProviderFailure {
  if (err instanceof ProviderError) return err.failure;
  if (signal.aborted) return { kind: 'aborted', status: null, retryable: false, message: 'request aborted by the caller' };
  const code = (err as { code?: string })?.code;
  const timeout = code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || (err as Error)?.name === 'TimeoutError';
  return { kind: timeout ? 'timeout' : 'network', status: null, retryable: true, message: `${timeout ? 'timeout' : 'network error'}${code ? ` (${code})` : ''} talking to the provider` };
}

/** The caller's side of a proxied call: where a streamed answer goes, and its abort signal. */
export interface ClientSide {
  sink: StreamSink;
  signal: AbortSignal;
}

/** One try of a proxied call: its target, the request as Tollgate reads it, the headers added to the reply, the output ceiling. */
export interface ProxyTry {
  target: Target;
  req: NormalizedRequest;
  extraHeaders: Record<string, string>;
  ceiling: number | undefined;
}

/** The native body, byte for byte (model replaced when a same-provider target model is set), to the provider. */
export async function passThrough(
  deps: ProxyDeps,
  client: ClientSide,
  sent: { call: ProxyCall; body: ParsedBody; headers: RequestHeaders },
  attempt: ProxyTry,
): Promise<Attempt> {
  const { call, body, headers: requestHeaders } = sent;
  const { target, req, extraHeaders, ceiling } = attempt;
  const clientSignal = client.signal;
  const endpoint = deps.config.providers[call.provider];
  if (!endpoint?.apiKey || !endpoint.baseUrl) {
    const failure: ProviderFailure = { kind: 'http_error', status: null, retryable: false, message: `provider ${call.provider} has no API key configured` };
    return { ok: false, failure, reply: jsonReply(502, nativeErrorBody(call.provider, { status: 502, code: 'provider_not_configured', message: failure.message }), extraHeaders) };
  }
  let bytes = body.raw;
  if (body.kind === 'json' && (target.model !== call.model || ceiling !== undefined)) {
    let json = target.model !== call.model ? { ...body.json, model: target.model } : body.json;
    if (ceiling !== undefined) json = withNativeCeiling(call.provider, call.pathname, json, ceiling);
    bytes = Buffer.from(JSON.stringify(json));
  }
  const d = deadline(deps.config.providerTimeouts.totalMs, clientSignal);
  const mod = providerModules[call.provider];
  let res;
  try {
    res = await deps.upstream.send({ provider: call.provider, baseUrl: endpoint.baseUrl, apiKey: endpoint.apiKey, path: call.path, headers: forwardRequestHeaders(requestHeaders), body: bytes, signal: d.signal });
    releaseWithBody(d, res.body);
  } catch (err) {
    d.release();
    const failure = failureOf(err, clientSignal);
    if (clientSignal.aborted) return { ok: false, aborted: true, failure, partial: null };
    return { ok: false, failure, reply: jsonReply(502, nativeErrorBody(call.provider, { status: 502, code: 'upstream_unreachable', message: `The provider could not be reached: ${failure.message}` }), extraHeaders) };
  }
  const headers = { ...passBackHeaders(res.headers), ...extraHeaders };
  const contentType = String(res.headers['content-type'] ?? '');
  if (res.statusCode < 400 && contentType.includes('text/event-stream')) {
    return pipeStream(client, call, req, { res, headers });
  }
  let buf: Buffer;
  try {
    buf = Buffer.from(await res.body.arrayBuffer());
  } catch (err) {
    const failure = failureOf(err, clientSignal);
    if (clientSignal.aborted) return { ok: false, aborted: true, failure, partial: estimatedUsage(req, '') };
    return { ok: false, failure, partial: estimatedUsage(req, ''), reply: jsonReply(502, nativeErrorBody(call.provider, { status: 502, code: 'upstream_error', message: `The provider response broke off: ${failure.message}` }), extraHeaders) };
  }
  let json: unknown = null;
  if (contentType.includes('json')) {
    try {
      json = JSON.parse(buf.toString('utf8'));
    } catch {
      json = buf.toString('utf8');
    }
  }
  const reply: Reply = { status: res.statusCode, headers, body: buf };
  if (res.statusCode >= 400) return { ok: false, failure: mod.mapError(res.statusCode, json ?? buf.toString('utf8').slice(0, 2000), res.headers), partial: null, reply };
  const answer = mod.answerOfNative(call.pathname, json);
  return { ok: true, usage: usageOfNative(call, req, json), reply, ...responseModelOf(json), ...(answer ? { answer } : {}) };
}

/** The answering model of a native JSON response: `model` (OpenAI-style, Anthropic), `modelVersion` (Gemini). */
function responseModelOf(json: unknown): { model?: string } {
  if (!json || typeof json !== 'object') return {};
  const { model, modelVersion } = json as { model?: unknown; modelVersion?: unknown };
  const m = typeof model === 'string' ? model : typeof modelVersion === 'string' ? modelVersion : undefined;
  return m ? { model: m } : {};
}

/** Pipes a native SSE stream to the caller unchanged, extracting usage from the events on the way. */
export async function pipeStream(
  client: ClientSide,
  call: ProxyCall,
  req: NormalizedRequest,
  upstream: { res: { statusCode: number; body: AsyncIterable<unknown> & { destroy(err?: Error): unknown } }; headers: Record<string, string> },
): Promise<Attempt> {
  const { sink, signal: clientSignal } = client;
  const { res, headers } = upstream;
  const mod = providerModules[call.provider];
  const events: SseEvent[] = [];
  const parser = mod.createStreamParser(req);
  let text = '';
  let streamError: unknown = null;
  const sse = createParser({
    onEvent: (e: EventSourceMessage) => {
      const ev = { event: e.event, data: e.data };
      events.push(ev);
      try {
        for (const d of parser.push(ev)) text += d;
      } catch (err) {
        streamError ??= err;
      }
    },
  });
  const decoder = new TextDecoder();
  sink.open(res.statusCode, { ...headers, 'cache-control': headers['cache-control'] ?? 'no-cache', 'x-accel-buffering': 'no' });
  const captured: Buffer[] = [];
  let broken: unknown = null;
  try {
    for await (const chunk of res.body) {
      const b = chunk as Buffer;
      captured.push(b);
      sink.write(b);
      sse.feed(decoder.decode(b, { stream: true }));
    }
    sse.feed(decoder.decode());
  } catch (err) {
    broken = err;
  }
  const usage = mod.extractStreamUsage(events);
  const snap = parser.snapshot();
  // Without reported usage the output is estimated from what was streamed: text and tool-call arguments.
  const streamed = text + snap.tool_calls.map((c) => c.arguments).join('');
  const partial = () => ({ ...(usage ?? estimatedUsage(req, streamed)), estimated: true });
  if (clientSignal.aborted) {
    sink.destroy();
    return { ok: false, aborted: true, streamed: true, failure: { kind: 'aborted', status: null, retryable: false, message: 'client disconnected' }, partial: partial() };
  }
  if (broken) {
    // Pass the break on: the caller's SDK sees a stream cut short, as it would from the provider.
    sink.destroy();
    return { ok: false, streamed: true, failure: { kind: 'stream_broken', status: res.statusCode, retryable: true, message: 'provider stream broke before it finished' }, partial: partial() };
  }
  const finish = () => sink.end();
  const body = Buffer.concat(captured);
  const reply: Reply = { status: res.statusCode, headers, body };
  if (streamError || !snap.done) {
    const failure: ProviderFailure = { kind: 'stream_broken', status: res.statusCode, retryable: true, message: streamError ? 'provider sent an error event in the stream' : 'provider stream ended before its final event' };
    return { ok: false, streamed: true, failure, partial: partial(), finish };
  }
  return { ok: true, streamed: true, usage: usage ?? estimatedUsage(req, streamed), reply, finish, answer: { finish_reason: snap.finish_reason, tool_calls: snap.tool_calls } };
}

/** A cross-provider target: normalized request through the target's module, rendered back in the caller's shape. */
export async function translated(deps: ProxyDeps, call: ProxyCall, target: Target, opts: { signal: AbortSignal; extraHeaders: Record<string, string> }): Promise<Attempt> {
  const { signal, extraHeaders } = opts;
  const req = translatedRequest(call, target);
  try {
    const result = await deps.providers.dispatch(req, { signal });
    const body = renderNative(call.provider, target, result, Math.floor(deps.clock.now().getTime() / 1000));
    return { ok: true, usage: result.usage, reply: jsonReply(200, body, extraHeaders), answer: { finish_reason: result.finish_reason ?? null, tool_calls: [] }, ...(result.provider_model ? { model: result.provider_model } : {}) };
  } catch (err) {
    const failure = failureOf(err, signal);
    const partial = err instanceof ProviderError ? err.partialUsage ?? null : null;
    if (signal.aborted) return { ok: false, aborted: true, failure, partial };
    const status = failure.status && failure.status >= 400 && failure.status < 500 && failure.status !== 429 ? failure.status : 502;
    return { ok: false, failure, partial, reply: jsonReply(status, nativeErrorBody(call.provider, { status, code: 'upstream_error', message: `${target.provider}/${target.model}: ${failure.message}` }), extraHeaders) };
  }
}

