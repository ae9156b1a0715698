/**
 * OpenAI's Responses API (`POST /v1/responses`) as the proxy sees it: the text the firewall
 * inspects (`instructions` and the `input` items), usage (`input_tokens`, `output_tokens`, cached
 * and reasoning details) from the response or from the stream's `response.completed` event, and
 * the stream's text deltas (`response.output_text.delta`). Events pass to the caller unchanged.
 */
import { makeUsage, type UsageCounts } from '../shared/usage';
import { distinctNames, parseEventJson, StreamErrorEvent, type AnswerToolCall, type NativeAnswer, type SseEvent, type StreamParser, type StreamSnapshot } from '../shared/module';
import { openAIToolName } from '../shared/openai-compat';
import type { Usage } from '../types';
import { roleText, textOfItem, type InspectableText } from '../../governance/firewall/roles';

type Json = Record<string, any>;

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);

/** A Responses API request body (rather than chat completions'). */
export function isResponsesBody(body: unknown): boolean {
  return !!body && typeof body === 'object' && !Array.isArray((body as Json).messages) && ('input' in (body as Json) || 'instructions' in (body as Json));
}

export function responsesInspectableText(body: unknown): string[] {
  return responsesInspectableItems(body).map(textOfItem);
}

/** `instructions` (system) and the `input` items (function_call_output as tool output), role-tagged for the firewall. */
export function responsesInspectableItems(body: unknown): InspectableText[] {
  const b = body as Json;
  const out: InspectableText[] = [];
  if (typeof b.instructions === 'string') out.push(roleText('system', b.instructions));
  const pushContent = (c: unknown, role: unknown) => {
    if (typeof c === 'string') out.push(roleText(role, c));
    else if (Array.isArray(c)) for (const part of c) if (typeof part?.text === 'string') out.push(roleText(role, part.text));
  };
  if (typeof b.input === 'string') out.push(b.input);
  else if (Array.isArray(b.input)) {
    for (const item of b.input) {
      if (typeof item === 'string') out.push(item);
      else if (item && typeof item === 'object') {
        pushContent((item as Json).content, (item as Json).role);
        if (typeof (item as Json).output === 'string') out.push(roleText('tool', (item as Json).output)); // function_call_output
      }
    }
  }
  return out;
}

export function responsesUsageCounts(u: unknown): UsageCounts | null {
  if (!u || typeof u !== 'object') return null;
  const r = u as Json;
  if (num(r.input_tokens) === undefined && num(r.output_tokens) === undefined) return null;
  return {
    input_tokens: num(r.input_tokens),
    output_tokens: num(r.output_tokens),
    total_tokens: num(r.total_tokens),
    cached_input_tokens: num(r.input_tokens_details?.cached_tokens),
    reasoning_tokens: num(r.output_tokens_details?.reasoning_tokens),
  };
}

export function responsesUsage(body: unknown): Usage | null {
  const c = responsesUsageCounts((body as Json | null)?.usage);
  return c ? makeUsage(c) : null;
}

/** Whether an SSE event belongs to a Responses API stream (its data has a `response.*` type). */
export function isResponsesEvent(ev: SseEvent): boolean {
  return (ev.event ?? '').startsWith('response.') || /^\s*\{\s*"type"\s*:\s*"response\./.test(ev.data);
}

/** Usage of a Responses stream: the `response.completed` (or `response.incomplete`) event's. */
export function responsesStreamUsage(events: SseEvent[]): Usage | null {
  for (let i = events.length - 1; i >= 0; i--) {
    if (!isResponsesEvent(events[i])) continue;
    try {
      const e = JSON.parse(events[i].data) as Json;
      if (e.type === 'response.completed' || e.type === 'response.incomplete') return responsesUsage(e.response);
    } catch {
      /* skip */
    }
  }
  return null;
}

/** The Responses API has no finish reason: a completed response is `stop`, an incomplete one `length`. */
const finishOf = (status: unknown): string | null => (status === 'completed' ? 'stop' : status === 'incomplete' ? 'length' : typeof status === 'string' ? status : null);

/** An output item that is a tool call: `function_call`, `custom_tool_call`, `mcp_call`, or a built-in tool's `*_call` (named by its type). */
function toolCallOf(item: Json | null | undefined): AnswerToolCall | null {
  const type = item?.type;
  if (typeof type !== 'string' || !type.endsWith('_call')) return null;
  const name = typeof item!.name === 'string' && item!.name ? item!.name : type;
  const args = item!.arguments ?? item!.input;
  return { name, arguments: typeof args === 'string' ? args : '' };
}

/** The tool calls among a response's output items. */
function outputToolCalls(output: unknown): AnswerToolCall[] {
  return Array.isArray(output) ? output.map((o) => toolCallOf(o as Json)).filter((c): c is AnswerToolCall => c !== null) : [];
}

/** Finish reason and tool calls of a Responses API response body. */
export function responsesAnswer(body: unknown): NativeAnswer | null {
  const b = body as Json | null;
  if (!b || b.object !== 'response') return null;
  return { finish_reason: finishOf(b.status), tool_calls: outputToolCalls(b.output) };
}

/** The tools a Responses request offers: functions and custom tools by name, built-in tools by type. */
export function responsesRequestTools(body: unknown): string[] {
  const b = body as Json | null;
  return Array.isArray(b?.tools) ? distinctNames(b.tools.map(openAIToolName)) : [];
}

export function createResponsesStreamParser(): StreamParser {
  const state: StreamSnapshot = { usage: null, finish_reason: null, tool_calls: [], model: null, done: false };
  const calls = new Map<number, AnswerToolCall>();
  return {
    push(ev: SseEvent): string[] {
      const e = parseEventJson(ev) as Json;
      switch (e.type) {
        case 'response.output_text.delta':
          return typeof e.delta === 'string' && e.delta ? [e.delta] : [];
        case 'response.created':
          if (typeof e.response?.model === 'string') state.model = e.response.model;
          return [];
        case 'response.output_item.added': {
          const c = toolCallOf(e.item);
          if (c && typeof e.output_index === 'number') {
            calls.set(e.output_index, c);
            state.tool_calls.push(c);
          }
          return [];
        }
        case 'response.function_call_arguments.delta':
        case 'response.custom_tool_call_input.delta':
        case 'response.mcp_call_arguments.delta': {
          const c = calls.get(e.output_index);
          if (c && typeof e.delta === 'string') c.arguments += e.delta;
          return [];
        }
        case 'response.completed':
        case 'response.incomplete': {
          state.usage = responsesUsageCounts(e.response?.usage);
          state.finish_reason = finishOf(e.type === 'response.completed' ? 'completed' : 'incomplete');
          // The final response lists every output item whole: its calls are the answer's.
          const final = outputToolCalls(e.response?.output);
          if (final.length) state.tool_calls = final;
          state.done = true;
          return [];
        }
        case 'response.failed':
        case 'error':
          throw new StreamErrorEvent(e, null);
        default:
          return [];
      }
    },
    snapshot: () => ({ ...state }),
  };
}
