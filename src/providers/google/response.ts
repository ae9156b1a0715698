/** Gemini responses and usageMetadata → ProviderResult / Usage. */
import type { NormalizedRequest, ProviderResult, Usage } from '../types';
import { ProviderError } from '../types';
import type { AnswerToolCall, NativeAnswer, NativeCall } from '../shared/module';
import { estimateInputTokens, makeUsage, type UsageCounts } from '../shared/usage';

/** usageMetadata → counts; thoughts are billed as output and also reported as reasoning tokens. */
export function googleUsageCounts(u: unknown): UsageCounts | null {
  if (!u || typeof u !== 'object') return null;
  const r = u as Record<string, any>;
  const n = (v: unknown) => (typeof v === 'number' ? v : undefined);
  if (n(r.promptTokenCount) === undefined && n(r.totalTokenCount) === undefined) return null;
  const thoughts = n(r.thoughtsTokenCount);
  return {
    input_tokens: n(r.promptTokenCount),
    output_tokens: (n(r.candidatesTokenCount) ?? 0) + (thoughts ?? 0),
    total_tokens: n(r.totalTokenCount),
    cached_input_tokens: n(r.cachedContentTokenCount),
    reasoning_tokens: thoughts,
  };
}

export function candidateText(body: any): string {
  const parts = body?.candidates?.[0]?.content?.parts;
  return Array.isArray(parts) ? parts.filter((p: any) => typeof p?.text === 'string' && !p.thought).map((p: any) => p.text).join('') : '';
}

/** The function calls of a response's first candidate (a call arrives whole, also in a stream chunk). */
export function candidateToolCalls(body: any): AnswerToolCall[] {
  const parts = body?.candidates?.[0]?.content?.parts;
  if (!Array.isArray(parts)) return [];
  return parts.filter((p: any) => typeof p?.functionCall?.name === 'string').map((p: any) => ({ name: p.functionCall.name, arguments: JSON.stringify(p.functionCall.args ?? {}) }));
}

/** Finish reason and function calls of a generateContent response body; null for embeddings. */
export function googleAnswer(_path: string, body: unknown): NativeAnswer | null {
  const b = body as Record<string, any> | null;
  if (!b || !Array.isArray(b.candidates)) return null;
  return { finish_reason: b.candidates[0]?.finishReason ?? null, tool_calls: candidateToolCalls(b) };
}

export function parseGoogleResponse(req: NormalizedRequest, call: NativeCall, payload: unknown): ProviderResult {
  const b = payload as Record<string, any>;
  const bad = (message: string): never => {
    throw new ProviderError({ kind: 'malformed_response', status: 200, retryable: true, message, native: payload });
  };
  if (!b || typeof b !== 'object') bad('gemini response is not an object');
  if (call.path.includes(':embedContent') || call.path.includes(':batchEmbedContents')) {
    const list = call.path.includes(':embedContent') ? [b.embedding] : b.embeddings;
    if (!Array.isArray(list) || list.some((e: any) => !Array.isArray(e?.values))) bad('gemini embedding response without values');
    // Gemini reports no token usage for embeddings: input is estimated with the tokenizer.
    const counts = googleUsageCounts(b.usageMetadata);
    return {
      output: { content: [], embeddings: list.map((e: any) => e.values as number[]) },
      output_assets: [],
      usage: makeUsage(counts ?? { input_tokens: estimateInputTokens(req), output_tokens: 0 }, !counts),
      finish_reason: null,
    };
  }
  if (!Array.isArray(b.candidates)) bad('gemini response without candidates');
  const counts = googleUsageCounts(b.usageMetadata);
  return {
    output: { content: [{ type: 'text', role: 'assistant', text: candidateText(b) }] },
    output_assets: [],
    usage: makeUsage(counts ?? {}, !counts),
    provider_model: typeof b.modelVersion === 'string' ? b.modelVersion : undefined,
    finish_reason: b.candidates[0]?.finishReason ?? null,
  };
}

export function extractGoogleUsage(_path: string, body: unknown): Usage | null {
  const c = googleUsageCounts((body as Record<string, unknown> | null)?.usageMetadata);
  return c ? makeUsage(c) : null;
}
