/**
 * The dispatch side of hard caps (src/governance/output-ceiling.ts decides): the worst-case cost of
 * a call under an output-token ceiling, over every target it may reach, and the request with the
 * ceiling governance set or lowered.
 */
import type { GovernanceRequest } from '../governance/types';
import type { PricingCatalog } from '../pricing/types';
import { CHAT_MESSAGE_OVERHEAD_TOKENS } from '../pricing/tokenizer';
import { makeUsage, requestTexts } from '../providers/shared/usage';
import { toolDefinitions, toolDefinitionsJson } from '../providers/shared/tool-definitions';
import type { NormalizedRequest, ProviderId } from '../providers/types';
import type { ExecutionInput, GovernOutcome } from './types';

/** Calls whose output is text priced per output token (what a ceiling bounds). */
export function producesTextTokens(req: Pick<NormalizedRequest, 'operation' | 'provider'>): boolean {
  return req.operation === 'generate.text' || req.operation === 'understand.image' || (req.operation === 'transcribe.audio' && req.provider === 'google');
}

const MAX_CHOICES = 128;

/** Completions asked for at once (openai-style `n`, Gemini `candidateCount`): each may use the whole ceiling. */
export function choicesOf(options: Record<string, unknown> | undefined): number {
  if (!options) return 1;
  const gc = (options.generationConfig ?? options.generation_config) as Record<string, unknown> | undefined;
  const raw = options.n ?? gc?.candidateCount ?? gc?.candidate_count;
  const n = typeof raw === 'number' && Number.isFinite(raw) ? Math.floor(raw) : 1;
  return Math.min(MAX_CHOICES, Math.max(1, n));
}

/**
 * Output a model may produce outside its ceiling field: deepseek-reasoner's chain of thought is not
 * counted in `max_tokens` (DeepSeek documents up to 32K tokens of it), so the worst case adds it.
 */
const REASONING_OUTSIDE_CEILING: Partial<Record<ProviderId, Record<string, number>>> = { deepseek: { 'deepseek-reasoner': 32_768 } };

/** Providers whose models tokenize with o200k, the estimator's own tokenizer: its count bounds their input exactly. */
const O200K_PROVIDERS: ReadonlySet<ProviderId> = new Set(['openai']);

/**
 * The input's upper bound for a target: the o200k count where that is the provider's tokenizer;
 * elsewhere (Anthropic, Gemini, DeepSeek, Mistral count with their own) the UTF-8 size plus the
 * per-message overhead, and the size of the tool definitions' JSON, since no byte-level BPE or
 * byte-fallback token is shorter than a byte.
 */
function inputBoundFor(provider: ProviderId, counted: number, request: NormalizedRequest): () => number {
  if (O200K_PROVIDERS.has(provider)) return () => counted;
  let bytes: number | null = null;
  return () => {
    if (bytes === null) {
      const tools = toolDefinitionsJson(toolDefinitions(request.providerOptions));
      const texts = requestTexts(request).reduce((n, t) => n + Buffer.byteLength(t, 'utf8') + CHAT_MESSAGE_OVERHEAD_TOKENS, 0);
      bytes = Math.max(counted, texts + (tools ? Buffer.byteLength(tools, 'utf8') : 0));
    }
    return bytes;
  };
}

/**
 * The output spec governance sizes the reservation with: the caller's ceiling and the worst case
 * under a ceiling, the most expensive of the primary and the fallback targets (each asked for the
 * same input, bounded for its tokenizer, and the same ceiling). Undefined when the output is not priced per token.
 */
export function outputCeilingSpec(
  pricing: PricingCatalog,
  input: Pick<ExecutionInput, 'routing' | 'request'>,
  request: NormalizedRequest,
  inputTokens: number,
): GovernanceRequest['output'] {
  if (!producesTextTokens(request)) return undefined;
  const targets = [input.routing.primary, ...input.routing.fallback].map((t) => ({ ...t, primary: t === input.routing.primary, inputBound: inputBoundFor(t.provider, inputTokens, request) }));
  return {
    requested: request.parameters?.max_output_tokens ?? null,
    costAt(ceiling: number) {
      let worst: number | null = null;
      for (const t of targets) {
        const options = input.request.providerOptions?.[t.provider] ?? (t.provider === request.provider ? request.providerOptions : undefined);
        const cost = pricing.costMicros(t.provider, t.model, makeUsage({ input_tokens: t.inputBound(), output_tokens: (ceiling + (REASONING_OUTSIDE_CEILING[t.provider]?.[t.model] ?? 0)) * choicesOf(options) }, true));
        // An unpriced fallback target has no cost to bound (its usage is recorded at 0).
        if (cost === null) {
          if (t.primary) return null;
          continue;
        }
        worst = Math.max(worst ?? 0, cost);
      }
      return worst;
    },
  };
}

/** The execution with the output ceiling governance set or lowered (unchanged when it set none). */
export function withOutputCeiling<T extends Pick<ExecutionInput, 'request'>>(input: T, gov: Pick<GovernOutcome, 'max_output_tokens'>): T {
  if (gov.max_output_tokens === undefined) return input;
  return { ...input, request: { ...input.request, parameters: { ...input.request.parameters, max_output_tokens: gov.max_output_tokens } } };
}
