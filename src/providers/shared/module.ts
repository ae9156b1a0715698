/**
 * The per-provider module contract. Every provider folder exports one `ProviderModule`; the gateway
 * (src/providers/index.ts) drives them, and the proxy routes can reuse the pieces one by one
 * (request/response/stream transforms, error mapping, native usage extraction, inspectable text).
 */
import type { FormData } from 'undici';
import { ProviderError, type NormalizedRequest, type ProviderFailure, type ProviderId, type ProviderResult, type Usage } from '../types';
import type { UsageCounts } from './usage';
import type { InspectableText } from '../../governance/firewall/roles';

/** One native HTTP call, relative to the provider's base URL. Auth headers are added separately. */
export interface NativeCall {
  method: 'POST';
  /** Path (and query) appended to the provider base URL, e.g. `/v1/chat/completions`. */
  path: string;
  headers: Record<string, string>;
  /** A JSON body, or multipart form data (openai transcriptions). */
  body: Record<string, unknown> | FormData;
  bodyKind: 'json' | 'multipart';
  /** `binary` for audio bytes (openai speech); `sse` for streams. */
  responseKind: 'json' | 'binary' | 'sse';
}

/** A JSON POST to `path`, answered as one JSON body or, when `sse`, as a stream. */
export function jsonCall(path: string, body: Record<string, unknown>, sse = false): NativeCall {
  return { method: 'POST', path, headers: {}, body, bodyKind: 'json', responseKind: sse ? 'sse' : 'json' };
}

export interface FetchedAsset {
  data: Buffer;
  mimeType: string;
  filename: string;
}

export interface BuildContext {
  /** Downloads an input asset (URL or data: URL); used where a provider needs the bytes. */
  fetchAsset(url: string, mimeType?: string): Promise<FetchedAsset>;
}

/** One parsed SSE event. */
export interface SseEvent {
  event?: string;
  data: string;
}

/**
 * A tool call in a provider's answer: the tool's name and its arguments as the JSON text the
 * provider sent. Only the name is ever recorded; the arguments are counted where usage is estimated.
 */
export interface AnswerToolCall {
  name: string;
  arguments: string;
}

/** What a native answer says beyond its text and usage: why it ended, and the tool calls it carries. */
export interface NativeAnswer {
  finish_reason: string | null;
  tool_calls: AnswerToolCall[];
}

export interface StreamSnapshot {
  /** Usage the provider reported in the stream so far (null when none yet). */
  usage: UsageCounts | null;
  finish_reason: string | null;
  /** The tool calls streamed so far, in the order they started. */
  tool_calls: AnswerToolCall[];
  model: string | null;
  /** True once the provider's terminal signal was seen ([DONE], message_stop, finishReason...). */
  done: boolean;
}

/** Incremental parser of a provider's native stream. `push` returns the text deltas of one event. */
export interface StreamParser {
  push(ev: SseEvent): string[];
  snapshot(): StreamSnapshot;
}

/** Thrown by stream parsers when the provider sends an error event mid-stream. */
export class StreamErrorEvent extends Error {
  constructor(readonly native: unknown, readonly status: number | null) {
    super('provider sent an error event in the stream');
  }
}

/** Tool names in order, each once (a name that is not a non-empty string is left out). */
export function distinctNames(names: unknown[]): string[] {
  const out: string[] = [];
  for (const n of names) if (typeof n === 'string' && n && !out.includes(n)) out.push(n);
  return out;
}

/** JSON of one stream event; an unparseable event is a malformed_response. */
 
export function parseEventJson(ev: SseEvent): any {
  try {
    return JSON.parse(ev.data);
  } catch {
    throw new ProviderError({ kind: 'malformed_response', status: 200, retryable: true, message: 'unparseable stream event', native: ev.data });
  }
}

export interface ProviderModule {
  id: ProviderId;
  /** Headers carrying the API key (never logged). */
  authHeaders(apiKey: string): Record<string, string>;
  /** Normalized → native request (body, path, headers). */
  buildRequest(req: NormalizedRequest, ctx: BuildContext): Promise<NativeCall>;
  /** Native response → ProviderResult. `payload` is parsed JSON, or a Buffer for binary responses. */
  parseResponse(req: NormalizedRequest, call: NativeCall, payload: unknown, contentType: string): ProviderResult;
  /** Native SSE events → text deltas + usage. */
  createStreamParser(req: NormalizedRequest): StreamParser;
  /** HTTP status + native error body (+ headers) → provider-neutral failure. */
  mapError(status: number, body: unknown, headers?: Record<string, string | string[] | undefined>): ProviderFailure;
  /** The provider's own error body for a status and message (the emulator serves these). */
  errorBody(status: number, message: string): unknown;
  /** Usage of a provider-native response body for the given native path; null when it carries none. */
  extractUsageFromNative(path: string, body: unknown): Usage | null;
  /** Usage carried by a provider-native stream (the SSE events seen); null when it carried none. */
  extractStreamUsage(events: SseEvent[]): Usage | null;
  /** Finish reason and tool calls of a provider-native response body; null when it is no model answer (embeddings, media). */
  answerOfNative(path: string, body: unknown): NativeAnswer | null;
  /** The tools a native request offers the model, by name (a built-in tool by its type), for governance. */
  requestTools(nativeRequestBody: unknown): string[];
  /** The user-visible text of a native request body, for the prompt firewall on proxy routes. */
  inspectableText(nativeRequestBody: unknown): string[];
  /** The same texts with their role (system prompt, tool output, user), for the firewall's role-aware policy. */
  inspectableItems(nativeRequestBody: unknown): InspectableText[];
}
