/**
 * Anthropic stream: message_start (input usage) → content_block_* (text_delta) → message_delta
 * (final output_tokens, stop_reason) → message_stop. `error` events carry a native error body.
 */
import type { Usage } from '../types';
import { StreamErrorEvent, parseEventJson, type AnswerToolCall, type SseEvent, type StreamParser, type StreamSnapshot } from '../shared/module';
import { makeUsage, type UsageCounts } from '../shared/usage';
import { anthropicUsageCounts, TOOL_USE_BLOCKS } from './response';

/** Folds one event into the running usage (message_start gives input, message_delta the final output). */
function foldUsage(acc: UsageCounts | null, ev: any): UsageCounts | null {
  if (ev?.type === 'message_start') return anthropicUsageCounts(ev.message?.usage) ?? acc;
  if (ev?.type === 'message_delta' && ev.usage) {
    const c = anthropicUsageCounts({ input_tokens: 0, ...ev.usage });
    if (!c) return acc;
    const hasInput = typeof ev.usage.input_tokens === 'number';
    return {
      ...(acc ?? {}),
      output_tokens: c.output_tokens,
      ...(hasInput ? { input_tokens: c.input_tokens, cached_input_tokens: c.cached_input_tokens ?? acc?.cached_input_tokens } : {}),
    };
  }
  return acc;
}

export function createAnthropicStreamParser(): StreamParser {
  const state: StreamSnapshot = { usage: null, finish_reason: null, tool_calls: [], model: null, done: false };
  let sawFinalUsage = false;
  // A tool_use block starts with its name; its input follows as input_json_delta pieces.
  const calls = new Map<number, AnswerToolCall>();
  return {
    push(ev: SseEvent): string[] {
      const data = parseEventJson(ev);
      const type = data?.type ?? ev.event;
      if (type === 'error') throw new StreamErrorEvent(data, data?.error?.type === 'overloaded_error' ? 529 : null);
      if (type === 'message_start' && typeof data.message?.model === 'string') state.model = data.message.model;
      if (type === 'message_delta') {
        state.finish_reason = data.delta?.stop_reason ?? state.finish_reason;
        if (data.usage) sawFinalUsage = true;
      }
      if (type === 'message_stop') state.done = true;
      if (type === 'content_block_start' && TOOL_USE_BLOCKS.has(data.content_block?.type) && typeof data.content_block.name === 'string') {
        const c = { name: data.content_block.name, arguments: '' };
        calls.set(data.index, c);
        state.tool_calls.push(c);
      }
      if (type === 'content_block_delta' && data.delta?.type === 'input_json_delta' && typeof data.delta.partial_json === 'string') {
        const c = calls.get(data.index);
        if (c) c.arguments += data.delta.partial_json;
      }
      state.usage = foldUsage(state.usage, data);
      if (type === 'content_block_delta' && data.delta?.type === 'text_delta' && typeof data.delta.text === 'string') return [data.delta.text];
      return [];
    },
    // Output tokens from message_start alone are a placeholder; without message_delta usage the
    // stream is treated as having reported no final usage.
    snapshot: () => ({ ...state, usage: sawFinalUsage ? state.usage : null }),
  };
}

export function extractAnthropicStreamUsage(events: SseEvent[]): Usage | null {
  const parser = createAnthropicStreamParser();
  for (const ev of events) {
    try {
      parser.push(ev);
    } catch {
      /* ignore error/unparseable events */
    }
  }
  const u = parser.snapshot().usage;
  return u ? makeUsage(u) : null;
}
