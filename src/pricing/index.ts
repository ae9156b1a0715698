/**
 * The pricing catalog (PricingCatalog over the versioned table in ./table.ts).
 *
 * Cost rule: cost = Σ quantity × unit price over every meter (uncached input tokens, cached input
 * tokens, output tokens, images, seconds of audio, characters), summed exactly in BigInt at a
 * resolution of 1e-6 micro-USD, then rounded UP to a whole micro-USD once per call. Audio seconds
 * are counted in whole milliseconds (rounded up). A model with no price → null.
 */
import { OPERATION_PROVIDERS, type NormalizedRequest, type Operation, type ProviderId, type Usage } from '../providers/types';
import { PROVIDER_IDS } from '../config';
import { estimateInputTokens, makeUsage, requestTexts } from '../providers/shared/usage';
import { TOKENIZER_NAME } from './tokenizer';
import type { CostEstimate, PricingCatalog, ResolvedModel } from './types';
import {
  ALIASES,
  DEFAULT_AUDIO_SECONDS_ESTIMATE,
  DEFAULT_MODELS,
  DEFAULT_OUTPUT_TOKENS_ESTIMATE,
  DEFAULT_PROVIDER,
  MODEL_PRICES,
  PRICING_TABLE_ID,
  type ModelPrice,
} from './table';

export { PRICING_TABLE_ID, DEFAULT_OUTPUT_TOKENS_ESTIMATE, DEFAULT_AUDIO_SECONDS_ESTIMATE, ALIASES, DEFAULT_MODELS } from './table';
export type { ModelPrice } from './table';
export { TOKENIZER_NAME, countTokens } from './tokenizer';

const MILLION = 1_000_000n;

/** Price of a model: exact id, else the id without a `models/` prefix or a date suffix (snapshots). */
export function priceOf(provider: ProviderId, model: string): ModelPrice | null {
  const table = MODEL_PRICES[provider];
  if (!table) return null;
  const bare = model.replace(/^models\//, '');
  const candidates = [bare, bare.replace(/-(\d{8}|\d{4}-\d{2}-\d{2})$/, ''), bare.replace(/-\d{3}$/, '')];
  for (const c of candidates) if (Object.prototype.hasOwnProperty.call(table, c)) return table[c];
  return null;
}

const big = (n: number | undefined) => BigInt(Math.max(0, Math.floor(n ?? 0)));

/** Exact cost in micro-USD, rounded up once; null when the model has no price. */
export function computeCostMicros(price: ModelPrice | null, usage: Usage): number | null {
  if (!price) return null;
  const input = big(usage.input_tokens);
  const cached = big(Math.min(usage.cached_input_tokens ?? 0, usage.input_tokens));
  const pin = big(price.input_per_mtok);
  const pcached = price.cached_input_per_mtok === undefined ? pin : big(price.cached_input_per_mtok);
  // Numerator in units of 1e-6 micro-USD.
  let n = (input - cached) * pin + cached * pcached + big(usage.output_tokens) * big(price.output_per_mtok);
  n += big(usage.images) * big(price.per_image) * MILLION;
  n += big(usage.characters) * big(price.per_character) * MILLION;
  const ms = BigInt(Math.ceil(Math.max(0, usage.audio_seconds ?? 0) * 1000));
  n += ms * big(price.per_audio_second) * 1000n;
  return Number((n + MILLION - 1n) / MILLION);
}

/** Own keys only: a model named "valueOf" or "__proto__" is an unknown model, not a prototype member. */
function aliasOf(name: string): { provider: ProviderId; model: string } | undefined {
  return Object.hasOwn(ALIASES, name) ? ALIASES[name] : undefined;
}

function findModel(model: string, provider?: ProviderId): ProviderId[] {
  const providers = provider ? [provider] : [...PROVIDER_IDS];
  return providers.filter((p) => priceOf(p, model) !== null);
}

export const pricing: PricingCatalog = {
  pricingTableId: PRICING_TABLE_ID,

  defaultTarget(operation: Operation, provider?: ProviderId) {
    const p = provider ?? DEFAULT_PROVIDER[operation];
    if (!OPERATION_PROVIDERS[operation]?.includes(p)) return null;
    const model = DEFAULT_MODELS[operation][p];
    return model ? { provider: p, model } : null;
  },

  resolveModel(modelOrAlias: string, provider?: ProviderId): ResolvedModel | null | 'ambiguous' {
    const alias = aliasOf(modelOrAlias);
    if (alias) {
      if (provider && alias.provider !== provider) return null;
      return { provider: alias.provider, model: alias.model, alias: modelOrAlias };
    }
    const found = findModel(modelOrAlias, provider);
    if (found.length === 0) return null;
    if (found.length > 1) return 'ambiguous';
    return { provider: found[0], model: modelOrAlias, alias: null };
  },

  costMicros(provider: ProviderId, model: string, usage: Usage): number | null {
    const alias = aliasOf(model);
    const resolved = alias?.provider === provider ? alias.model : model;
    return computeCostMicros(priceOf(provider, resolved), usage);
  },

  estimate(req: NormalizedRequest): CostEstimate {
    const input = req.operation === 'transcribe.audio' && req.provider === 'openai' ? 0 : estimateInputTokens(req);
    const producesText = req.operation === 'generate.text' || req.operation === 'understand.image' || (req.operation === 'transcribe.audio' && req.provider === 'google');
    const output = producesText ? req.parameters?.max_output_tokens ?? DEFAULT_OUTPUT_TOKENS_ESTIMATE : 0;
    const usage = makeUsage(
      {
        input_tokens: input,
        output_tokens: output,
        images: req.operation === 'generate.image' ? Number(req.providerOptions?.n ?? 1) || 1 : undefined,
        characters: req.operation === 'generate.audio' ? requestTexts(req).join('\n').length : undefined,
        audio_seconds: req.operation === 'transcribe.audio' && req.provider === 'openai' ? DEFAULT_AUDIO_SECONDS_ESTIMATE : undefined,
      },
      true,
    );
    return { input_tokens: input, output_tokens: output, cost_micros: pricing.costMicros(req.provider, req.model, usage), tokenizer: TOKENIZER_NAME };
  },
};
