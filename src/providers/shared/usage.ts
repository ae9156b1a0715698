/** Building the provider-neutral `Usage` (with its `metrics`) from provider-reported counts. */
import { CHAT_MESSAGE_OVERHEAD_TOKENS, countChatTokens, countTokens, EXACT_COUNT_MAX_CHARS } from '../../pricing/tokenizer';
import type { NormalizedRequest, Usage, UsageMetric } from '../types';
import { roleText, type InspectableText } from '../../governance/firewall/roles';
import { toolDefinitions, toolDefinitionTokens } from './tool-definitions';

export interface UsageCounts {
  input_tokens?: number;
  output_tokens?: number;
  total_tokens?: number;
  cached_input_tokens?: number;
  reasoning_tokens?: number;
  images?: number;
  audio_seconds?: number;
  characters?: number;
}

const int = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.round(v) : undefined;

/** A `Usage` with metrics listing every non-zero meter (input/output tokens always present). */
export function makeUsage(c: UsageCounts, estimated = false): Usage {
  const input = int(c.input_tokens) ?? 0;
  const output = int(c.output_tokens) ?? 0;
  const usage: Usage = {
    input_tokens: input,
    output_tokens: output,
    total_tokens: int(c.total_tokens) ?? input + output,
    metrics: [],
    estimated,
  };
  const metrics: UsageMetric[] = [
    { meter: 'input_tokens', quantity: input, unit: 'tokens' },
    { meter: 'output_tokens', quantity: output, unit: 'tokens' },
  ];
  const extra: [keyof UsageCounts, string][] = [
    ['cached_input_tokens', 'tokens'],
    ['reasoning_tokens', 'tokens'],
    ['images', 'images'],
    ['audio_seconds', 'seconds'],
    ['characters', 'characters'],
  ];
  for (const [k, unit] of extra) {
    const v = k === 'audio_seconds' ? (typeof c[k] === 'number' && c[k] >= 0 ? c[k] : undefined) : int(c[k]);
    if (v === undefined) continue;
    (usage as unknown as Record<string, number>)[k] = v;
    if (v > 0) metrics.push({ meter: k, quantity: v, unit });
  }
  usage.metrics = metrics;
  return usage;
}

/** The user-visible texts of a normalized request, in order (messages or text inputs). */
export function requestTexts(req: Pick<NormalizedRequest, 'messages' | 'inputs'>): string[] {
  if (req.messages) return req.messages.map((m) => m.content);
  return (req.inputs ?? []).filter((i) => i.type === 'text' && typeof i.text === 'string').map((i) => i.text!);
}

/** requestTexts with the system prompt tagged, for the firewall's role-aware policy. */
export function requestInspectable(req: Pick<NormalizedRequest, 'messages' | 'inputs'>): InspectableText[] {
  return req.messages ? req.messages.map((m) => roleText(m.role, m.content)) : requestTexts(req);
}

/**
 * Estimated input tokens of a normalized request (tokenizer; the pre-dispatch estimate, and usage
 * when a provider reports none): its texts, plus the tool definitions its provider options carry
 * (the model is charged for them as input; src/providers/shared/tool-definitions.ts).
 */
export function estimateInputTokens(req: Pick<NormalizedRequest, 'messages' | 'inputs' | 'operation' | 'providerOptions'>): number {
  return textTokens(req) + toolDefinitionTokens(toolDefinitions(req.providerOptions));
}

function textTokens(req: Pick<NormalizedRequest, 'messages' | 'inputs' | 'operation'>): number {
  const texts = requestTexts(req);
  // A request this large is bounded by its UTF-8 size, not counted (see EXACT_COUNT_MAX_CHARS).
  if (texts.reduce((n, t) => n + t.length, 0) > EXACT_COUNT_MAX_CHARS) {
    return texts.reduce((n, t) => n + Buffer.byteLength(t, 'utf8') + (req.operation === 'embed.text' ? 0 : CHAT_MESSAGE_OVERHEAD_TOKENS), 0);
  }
  if (req.operation === 'embed.text') return texts.reduce((n, t) => n + countTokens(t), 0);
  return countChatTokens(texts);
}

/** Usage estimated with the tokenizer: input from the request, output from the text produced so far. */
export function estimatedUsage(req: NormalizedRequest, outputText: string, reported?: UsageCounts | null): Usage {
  return makeUsage(
    {
      ...(reported ?? {}),
      input_tokens: reported?.input_tokens || estimateInputTokens(req),
      output_tokens: Math.max(reported?.output_tokens ?? 0, countTokens(outputText)),
      total_tokens: undefined,
    },
    true,
  );
}
