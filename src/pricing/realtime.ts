/**
 * Realtime (speech-to-speech) prices: text and audio tokens are metered separately, in and out,
 * cached input at its own price. Integers in micro-USD per 1M tokens, from OpenAI's published
 * Realtime API prices (pricing table `PRICING_TABLE_ID`); the text prices are also in the main
 * table (./table.ts) so the models resolve and estimate like any other.
 *
 * Cost rule as for every call (./index.ts): Σ tokens × price per meter, summed exactly in BigInt,
 * rounded up to a whole micro-USD once.
 */
import { priceOf } from './index';
import type { ProviderId } from '../providers/types';

export interface RealtimePrice {
  text_input_per_mtok: number;
  text_cached_input_per_mtok: number;
  text_output_per_mtok: number;
  audio_input_per_mtok: number;
  audio_cached_input_per_mtok: number;
  audio_output_per_mtok: number;
}

const usd = (dollarsPerMillion: number) => Math.round(dollarsPerMillion * 1_000_000);
/** Dollars per million tokens: input, cached input, output. */
type PerMtok = [input: number, cachedInput: number, output: number];
const rt = (text: PerMtok, audio: PerMtok): RealtimePrice => ({
  text_input_per_mtok: usd(text[0]),
  text_cached_input_per_mtok: usd(text[1]),
  text_output_per_mtok: usd(text[2]),
  audio_input_per_mtok: usd(audio[0]),
  audio_cached_input_per_mtok: usd(audio[1]),
  audio_output_per_mtok: usd(audio[2]),
});

export const REALTIME_PRICES: Record<string, RealtimePrice> = {
  'gpt-realtime': rt([4, 0.4, 16], [32, 0.4, 64]),
  'gpt-realtime-mini': rt([0.6, 0.06, 2.4], [10, 0.3, 20]),
  'gpt-4o-realtime-preview': rt([5, 2.5, 20], [40, 2.5, 80]),
  'gpt-4o-mini-realtime-preview': rt([0.6, 0.3, 2.4], [10, 0.3, 20]),
};

/** Token counts of a realtime response (OpenAI Realtime `response.done` usage, flattened). */
export interface RealtimeUsage {
  text_input_tokens: number;
  cached_text_input_tokens: number;
  audio_input_tokens: number;
  cached_audio_input_tokens: number;
  text_output_tokens: number;
  audio_output_tokens: number;
}

export function realtimePriceOf(provider: string, model: string): RealtimePrice | null {
  if (provider !== 'openai') return null;
  const bare = model.replace(/-(\d{8}|\d{4}-\d{2}-\d{2})$/, '');
  return Object.hasOwn(REALTIME_PRICES, bare) ? REALTIME_PRICES[bare] : null;
}

const big = (n: number) => BigInt(Math.max(0, Math.floor(n)));
const MILLION = 1_000_000n;

/**
 * Cost of realtime usage. Models without a realtime price are charged their text prices for every
 * token (audio tokens as text): null only when the model has no price at all.
 */
export function realtimeCostMicros(provider: ProviderId, model: string, u: RealtimeUsage): number | null {
  let p = realtimePriceOf(provider, model);
  if (!p) {
    const text = priceOf(provider, model);
    if (!text) return null;
    const i = text.input_per_mtok ?? 0;
    const c = text.cached_input_per_mtok ?? i;
    const o = text.output_per_mtok ?? 0;
    p = { text_input_per_mtok: i, text_cached_input_per_mtok: c, text_output_per_mtok: o, audio_input_per_mtok: i, audio_cached_input_per_mtok: c, audio_output_per_mtok: o };
  }
  const cachedText = Math.min(u.cached_text_input_tokens, u.text_input_tokens);
  const cachedAudio = Math.min(u.cached_audio_input_tokens, u.audio_input_tokens);
  const n =
    big(u.text_input_tokens - cachedText) * big(p.text_input_per_mtok) +
    big(cachedText) * big(p.text_cached_input_per_mtok) +
    big(u.audio_input_tokens - cachedAudio) * big(p.audio_input_per_mtok) +
    big(cachedAudio) * big(p.audio_cached_input_per_mtok) +
    big(u.text_output_tokens) * big(p.text_output_per_mtok) +
    big(u.audio_output_tokens) * big(p.audio_output_per_mtok);
  return Number((n + MILLION - 1n) / MILLION);
}
