/**
 * The OpenAI-shaped chat completions and embeddings wire format, shared by openai, deepseek and
 * mistral (their differences are parameters: token-limit field name, stream usage option, which
 * request content is allowed). Also the shared helpers every provider uses for normalized input.
 */
import { ProviderError } from '../types';
import type { NormalizedRequest, ProviderResult, Usage } from '../types';
import { makeUsage, type UsageCounts } from './usage';
import type { AnswerToolCall, NativeAnswer, SseEvent, StreamParser, StreamSnapshot } from './module';
import { StreamErrorEvent, distinctNames, parseEventJson } from './module';
import { roleText, textOfItem, type InspectableText } from '../../governance/firewall/roles';

export interface ChatFlavor {
  /** `max_completion_tokens` (openai) or `max_tokens` (deepseek, mistral). */
  maxTokensField: 'max_completion_tokens' | 'max_tokens';
  /** Whether to ask for a final usage chunk with `stream_options.include_usage`. */
  streamUsageOption: boolean;
}

/** provider_options first, then the top-level fields over them (top-level is authoritative). */
export function mergeOptions(req: NormalizedRequest, top: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...(req.providerOptions ?? {}) };
  for (const [k, v] of Object.entries(top)) if (v !== undefined) out[k] = v;
  return out;
}

export function refuse(message: string): never {
  throw new ProviderError({ kind: 'http_error', status: 400, retryable: false, message });
}

type ChatContent = string | ({ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } })[];

/** Messages of a normalized request in OpenAI chat shape (image inputs as `image_url` parts). */
export function toOpenAIMessages(req: NormalizedRequest): { role: string; content: ChatContent }[] {
  if (req.messages) return req.messages.map((m) => ({ role: m.role, content: m.content }));
  const parts: Exclude<ChatContent, string> = [];
  for (const item of req.inputs ?? []) {
    if (item.type === 'text') parts.push({ type: 'text', text: item.text ?? '' });
    else if (item.type === 'image' && item.asset?.url) parts.push({ type: 'image_url', image_url: { url: item.asset.url } });
    else refuse(`input type ${item.type} is not supported for ${req.operation} on ${req.provider}`);
  }
  const onlyText = parts.every((p) => p.type === 'text');
  return [{ role: 'user', content: onlyText ? parts.map((p) => (p as { text: string }).text).join('\n') : parts }];
}

export function buildChatBody(req: NormalizedRequest, flavor: ChatFlavor): Record<string, unknown> {
  const p = req.parameters ?? {};
  return mergeOptions(req, {
    model: req.model,
    messages: toOpenAIMessages(req),
    [flavor.maxTokensField]: p.max_output_tokens,
    temperature: p.temperature,
    top_p: p.top_p,
    stream: req.stream ? true : undefined,
    stream_options: req.stream && flavor.streamUsageOption ? { include_usage: true } : undefined,
  });
}

export function buildEmbeddingsBody(req: NormalizedRequest): Record<string, unknown> {
  const texts = req.messages ? req.messages.map((m) => m.content) : (req.inputs ?? []).map((i) => i.text ?? '');
  return mergeOptions(req, { model: req.model, input: texts });
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/** OpenAI-shaped `usage` → counts (openai cached/reasoning details, deepseek prompt_cache_hit_tokens). */
export function openAIUsageCounts(u: unknown): UsageCounts | null {
  if (!u || typeof u !== 'object') return null;
  const r = u as Record<string, any>;
  if (num(r.prompt_tokens) === undefined && num(r.completion_tokens) === undefined && num(r.total_tokens) === undefined) return null;
  return {
    input_tokens: num(r.prompt_tokens),
    output_tokens: num(r.completion_tokens),
    total_tokens: num(r.total_tokens),
    cached_input_tokens: num(r.prompt_tokens_details?.cached_tokens) ?? num(r.prompt_cache_hit_tokens),
    reasoning_tokens: num(r.completion_tokens_details?.reasoning_tokens),
  };
}

function malformed(message: string, native?: unknown): never {
  throw new ProviderError({ kind: 'malformed_response', status: 200, retryable: true, message, native });
}

export function parseChatResponse(body: unknown): ProviderResult {
  const b = body as Record<string, any>;
  if (!b || !Array.isArray(b.choices)) malformed('chat completion without choices', body);
  const choice = b.choices[0] ?? {};
  const content = choice.message?.content;
  const text = typeof content === 'string' ? content : Array.isArray(content) ? content.map((c: any) => c?.text ?? '').join('') : '';
  return {
    output: { content: [{ type: 'text', role: 'assistant', text }] },
    output_assets: [],
    usage: makeUsage(openAIUsageCounts(b.usage) ?? {}, !b.usage),
    provider_model: typeof b.model === 'string' ? b.model : undefined,
    finish_reason: choice.finish_reason ?? null,
  };
}

export function parseEmbeddingsResponse(body: unknown): ProviderResult {
  const b = body as Record<string, any>;
  if (!b || !Array.isArray(b.data)) malformed('embeddings response without data', body);
  const data = [...b.data].sort((x, y) => (x.index ?? 0) - (y.index ?? 0));
  return {
    output: { content: [], embeddings: data.map((d: any) => d.embedding as number[]) },
    output_assets: [],
    usage: makeUsage({ ...(openAIUsageCounts(b.usage) ?? {}), output_tokens: 0 }, !b.usage),
    provider_model: typeof b.model === 'string' ? b.model : undefined,
    finish_reason: null,
  };
}

/** Stream parser for OpenAI-shaped chat chunks (`data: {...}` ... `data: [DONE]`). */
export function createChatStreamParser(): StreamParser {
  const state: StreamSnapshot = { usage: null, finish_reason: null, tool_calls: [], model: null, done: false };
  let sawFinish = false;
  // A tool call streams as pieces that share its choice and index: the name first, then the arguments.
  const calls = new Map<string, AnswerToolCall>();
  const piece = (key: string, name: unknown, args: unknown) => {
    let c = calls.get(key);
    if (!c) {
      c = { name: '', arguments: '' };
      calls.set(key, c);
      state.tool_calls.push(c);
    }
    if (typeof name === 'string' && !c.name) c.name = name;
    if (typeof args === 'string') c.arguments += args;
  };
  return {
    push(ev: SseEvent): string[] {
      if (ev.data.trim() === '[DONE]') {
        state.done = true;
        return [];
      }
      const chunk = parseEventJson(ev);
      if (chunk?.error) throw new StreamErrorEvent(chunk, null);
      if (typeof chunk.model === 'string') state.model = chunk.model;
      const usage = openAIUsageCounts(chunk.usage);
      if (usage) state.usage = usage;
      const deltas: string[] = [];
      for (const choice of Array.isArray(chunk.choices) ? chunk.choices : []) {
        const t = choice?.delta?.content;
        if (typeof t === 'string' && t.length > 0) deltas.push(t);
        const ci = choice?.index ?? 0;
        const toolDeltas: any[] = Array.isArray(choice?.delta?.tool_calls) ? choice.delta.tool_calls : [];
        // A piece without an index or id is a whole call of its own.
        for (const tc of toolDeltas) piece(`${ci}:${typeof tc?.index === 'number' ? tc.index : tc?.id ?? `at${calls.size}`}`, tc?.function?.name, tc?.function?.arguments);
        if (choice?.delta?.function_call) piece(`${ci}:function_call`, choice.delta.function_call.name, choice.delta.function_call.arguments);
        if (choice?.finish_reason) {
          state.finish_reason = choice.finish_reason;
          sawFinish = true;
        }
      }
      // Without [DONE] a stream that delivered its finish_reason and usage is still complete.
      if (sawFinish && state.usage) state.done = true;
      return deltas;
    },
    snapshot: () => ({ ...state, done: state.done }),
  };
}

/** The shared `extractStreamUsage` for OpenAI-shaped streams. */
export function chatStreamUsage(events: SseEvent[]): Usage | null {
  let found: UsageCounts | null = null;
  for (const ev of events) {
    if (ev.data.trim() === '[DONE]') continue;
    try {
      const u = openAIUsageCounts(JSON.parse(ev.data)?.usage);
      if (u) found = u;
    } catch {
      /* skip unparseable events */
    }
  }
  return found ? makeUsage(found) : null;
}

/** Finish reason and tool calls of an OpenAI-shaped chat completion (every choice's calls); null for other bodies. */
export function chatAnswer(body: unknown): NativeAnswer | null {
  const b = body as Record<string, any>;
  if (!b || !Array.isArray(b.choices)) return null;
  const calls: AnswerToolCall[] = [];
  const add = (name: unknown, args: unknown) => {
    if (typeof name === 'string' && name) calls.push({ name, arguments: typeof args === 'string' ? args : JSON.stringify(args ?? null) });
  };
  for (const choice of b.choices) {
    const m = choice?.message;
    for (const tc of Array.isArray(m?.tool_calls) ? m.tool_calls : []) add(tc?.function?.name ?? tc?.custom?.name, tc?.function?.arguments ?? tc?.custom?.input);
    if (m?.function_call) add(m.function_call.name, m.function_call.arguments);
  }
  return { finish_reason: b.choices[0]?.finish_reason ?? null, tool_calls: calls };
}

/** The name of an OpenAI-shaped tool definition: a function's, a custom tool's, else its type (a built-in tool). */
export function openAIToolName(t: any): unknown {
  return t?.function?.name ?? t?.custom?.name ?? t?.name ?? t?.type;
}

/** The tools an OpenAI-shaped chat request offers (`tools`, and the older `functions`), by name. */
export function chatRequestTools(body: unknown): string[] {
  const b = body as Record<string, any>;
  if (!b || typeof b !== 'object') return [];
  return distinctNames([...(Array.isArray(b.tools) ? b.tools : []), ...(Array.isArray(b.functions) ? b.functions : [])].map(openAIToolName));
}

/** Texts of an OpenAI-shaped native chat or embeddings request (firewall inspection). */
export function chatInspectableText(body: unknown): string[] {
  return chatInspectableItems(body).map(textOfItem);
}

/** chatInspectableText with the role of each text (system/developer, tool/function, user): for the firewall. */
export function chatInspectableItems(body: unknown): InspectableText[] {
  const b = body as Record<string, any>;
  const out: InspectableText[] = [];
  if (!b || typeof b !== 'object') return out;
  for (const m of Array.isArray(b.messages) ? b.messages : []) {
    if (typeof m?.content === 'string') out.push(roleText(m.role, m.content));
    else if (Array.isArray(m?.content)) for (const part of m.content) if (typeof part?.text === 'string') out.push(roleText(m.role, part.text));
  }
  if (typeof b.input === 'string') out.push(b.input);
  else if (Array.isArray(b.input)) for (const i of b.input) if (typeof i === 'string') out.push(i);
  if (typeof b.prompt === 'string') out.push(b.prompt);
  return out;
}

/** OpenAI-style error body `{error: {message, type, param, code}}`. */
export function openAIErrorBody(status: number, message: string): unknown {
  const type =
    status === 401 ? 'invalid_request_error' : status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
  const code = status === 401 ? 'invalid_api_key' : status === 429 ? 'rate_limit_exceeded' : status === 404 ? 'model_not_found' : null;
  return { error: { message, type, param: null, code } };
}
