/** Anthropic Messages response and usage → ProviderResult / Usage. */
import type { ProviderResult, Usage } from '../types';
import { ProviderError } from '../types';
import { makeUsage, type UsageCounts } from '../shared/usage';
import type { AnswerToolCall, NativeAnswer } from '../shared/module';

/** Content blocks that are tool calls: the client's tools, and server or MCP tools Anthropic runs. */
export const TOOL_USE_BLOCKS = new Set(['tool_use', 'server_tool_use', 'mcp_tool_use']);

/**
 * Anthropic's `input_tokens` excludes cache reads and cache writes; Tollgate's input_tokens is the
 * whole prompt (input + cache_creation + cache_read) and cached_input_tokens = cache_read.
 */
export function anthropicUsageCounts(u: unknown): UsageCounts | null {
  if (!u || typeof u !== 'object') return null;
  const r = u as Record<string, any>;
  const n = (v: unknown) => (typeof v === 'number' ? v : 0);
  if (typeof r.input_tokens !== 'number' && typeof r.output_tokens !== 'number') return null;
  const cacheRead = n(r.cache_read_input_tokens);
  return {
    input_tokens: n(r.input_tokens) + n(r.cache_creation_input_tokens) + cacheRead,
    output_tokens: n(r.output_tokens),
    cached_input_tokens: typeof r.cache_read_input_tokens === 'number' ? cacheRead : undefined,
  };
}

export function parseAnthropicResponse(_req: unknown, _call: unknown, payload: unknown): ProviderResult {
  const b = payload as Record<string, any>;
  if (!b || b.type !== 'message' || !Array.isArray(b.content)) {
    throw new ProviderError({ kind: 'malformed_response', status: 200, retryable: true, message: 'anthropic response is not a message', native: payload });
  }
  const text = b.content.filter((c: any) => c?.type === 'text').map((c: any) => String(c.text ?? '')).join('');
  const counts = anthropicUsageCounts(b.usage);
  return {
    output: { content: [{ type: 'text', role: 'assistant', text }] },
    output_assets: [],
    usage: makeUsage(counts ?? {}, !counts),
    provider_model: typeof b.model === 'string' ? b.model : undefined,
    finish_reason: b.stop_reason ?? null,
  };
}

export function extractAnthropicUsage(_path: string, body: unknown): Usage | null {
  const c = anthropicUsageCounts((body as Record<string, unknown> | null)?.usage);
  return c ? makeUsage(c) : null;
}

/** Stop reason and tool calls (tool_use blocks) of a Messages response body. */
export function anthropicAnswer(_path: string, body: unknown): NativeAnswer | null {
  const b = body as Record<string, any> | null;
  if (!b || b.type !== 'message' || !Array.isArray(b.content)) return null;
  const calls: AnswerToolCall[] = b.content
    .filter((c: any) => TOOL_USE_BLOCKS.has(c?.type) && typeof c.name === 'string')
    .map((c: any) => ({ name: c.name, arguments: JSON.stringify(c.input ?? {}) }));
  return { finish_reason: b.stop_reason ?? null, tool_calls: calls };
}
