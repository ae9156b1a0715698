/**
 * The versioned pricing table. All prices are integers in micro-USD (1 USD = 1,000,000):
 * per-token prices are micro-USD per 1M tokens (so $0.15 / 1M tokens is 150_000), media prices are
 * micro-USD per image, per second of audio and per character of speech. A new price list is a new
 * table id; the old one stays reproducible from git.
 */
import type { Operation, ProviderId } from '../providers/types';

export const PRICING_TABLE_ID = 'pricing_2026_11_01';

export interface ModelPrice {
  /** micro-USD per 1M input tokens (uncached). */
  input_per_mtok?: number;
  /** micro-USD per 1M cached input tokens; absent → the input price applies. */
  cached_input_per_mtok?: number;
  /** micro-USD per 1M output tokens (reasoning tokens are output tokens). */
  output_per_mtok?: number;
  per_image?: number;
  per_audio_second?: number;
  per_character?: number;
}

const usd = (dollarsPerMillion: number) => Math.round(dollarsPerMillion * 1_000_000);
const tok = (input: number, cached: number | undefined, output: number): ModelPrice => ({
  input_per_mtok: usd(input),
  cached_input_per_mtok: cached === undefined ? undefined : usd(cached),
  output_per_mtok: usd(output),
});

export const MODEL_PRICES: Record<ProviderId, Record<string, ModelPrice>> = {
  openai: {
    'gpt-4o-mini': tok(0.15, 0.075, 0.6),
    'gpt-4o': tok(2.5, 1.25, 10),
    'gpt-4.1': tok(2, 0.5, 8),
    'gpt-4.1-mini': tok(0.4, 0.1, 1.6),
    'gpt-4.1-nano': tok(0.1, 0.025, 0.4),
    'o4-mini': tok(1.1, 0.275, 4.4),
    'text-embedding-3-small': tok(0.02, undefined, 0),
    'text-embedding-3-large': tok(0.13, undefined, 0),
    // Priced per image (medium quality, 1024x1024) plus the text prompt; image output tokens are
    // covered by the per-image price.
    'gpt-image-1': { input_per_mtok: usd(5), cached_input_per_mtok: usd(1.25), per_image: 42_000 },
    'dall-e-3': { per_image: 40_000 },
    'tts-1': { per_character: 15 },
    'tts-1-hd': { per_character: 30 },
    'whisper-1': { per_audio_second: 100 },
    'gpt-4o-transcribe': tok(2.5, undefined, 10),
    'gpt-4o-mini-transcribe': tok(1.25, undefined, 5),
    // Realtime models: text prices here; audio token prices in ./realtime.ts.
    'gpt-realtime': tok(4, 0.4, 16),
    'gpt-realtime-mini': tok(0.6, 0.06, 2.4),
    'gpt-4o-realtime-preview': tok(5, 2.5, 20),
    'gpt-4o-mini-realtime-preview': tok(0.6, 0.3, 2.4),
  },
  anthropic: {
    'claude-sonnet-4-5': tok(3, 0.3, 15),
    'claude-haiku-4-5': tok(1, 0.1, 5),
    'claude-opus-4-1': tok(15, 1.5, 75),
    'claude-3-5-haiku': tok(0.8, 0.08, 4),
  },
  google: {
    'gemini-2.5-flash': tok(0.3, 0.03, 2.5),
    'gemini-2.5-pro': tok(1.25, 0.125, 10),
    'gemini-2.5-flash-lite': tok(0.1, 0.01, 0.4),
    'gemini-2.0-flash': tok(0.1, 0.025, 0.4),
    'gemini-embedding-001': tok(0.15, undefined, 0),
  },
  deepseek: {
    'deepseek-chat': tok(0.28, 0.028, 0.42),
    'deepseek-reasoner': tok(0.28, 0.028, 0.42),
  },
  mistral: {
    'mistral-small-latest': tok(0.1, undefined, 0.3),
    'mistral-medium-latest': tok(0.4, undefined, 2),
    'mistral-large-latest': tok(2, undefined, 6),
    'pixtral-12b-2409': tok(0.15, undefined, 0.15),
    'mistral-embed': tok(0.1, undefined, 0),
  },
};

/** Default model per operation and provider (only for providers in the operation matrix). */
export const DEFAULT_MODELS: Record<Operation, Partial<Record<ProviderId, string>>> = {
  'generate.text': {
    openai: 'gpt-4o-mini',
    anthropic: 'claude-haiku-4-5',
    google: 'gemini-2.5-flash',
    deepseek: 'deepseek-chat',
    mistral: 'mistral-small-latest',
  },
  'embed.text': { openai: 'text-embedding-3-small', google: 'gemini-embedding-001', mistral: 'mistral-embed' },
  'understand.image': { openai: 'gpt-4o-mini', google: 'gemini-2.5-flash', mistral: 'mistral-small-latest' },
  'generate.image': { openai: 'gpt-image-1' },
  'generate.audio': { openai: 'tts-1' },
  'transcribe.audio': { openai: 'whisper-1', google: 'gemini-2.5-flash' },
};

/** The public default provider per operation (no provider requested). */
export const DEFAULT_PROVIDER: Record<Operation, ProviderId> = {
  'generate.text': 'openai',
  'embed.text': 'openai',
  'understand.image': 'openai',
  'generate.image': 'openai',
  'generate.audio': 'openai',
  'transcribe.audio': 'openai',
};

/** Aliases → concrete provider and model. */
export const ALIASES: Record<string, { provider: ProviderId; model: string }> = {
  'gpt-4o-latest': { provider: 'openai', model: 'gpt-4o' },
  'gpt-4o-mini-latest': { provider: 'openai', model: 'gpt-4o-mini' },
  'gpt-mini': { provider: 'openai', model: 'gpt-4o-mini' },
  'claude-sonnet': { provider: 'anthropic', model: 'claude-sonnet-4-5' },
  'claude-sonnet-latest': { provider: 'anthropic', model: 'claude-sonnet-4-5' },
  'claude-haiku': { provider: 'anthropic', model: 'claude-haiku-4-5' },
  'claude-opus': { provider: 'anthropic', model: 'claude-opus-4-1' },
  'gemini-flash': { provider: 'google', model: 'gemini-2.5-flash' },
  'gemini-flash-latest': { provider: 'google', model: 'gemini-2.5-flash' },
  'gemini-pro': { provider: 'google', model: 'gemini-2.5-pro' },
  'deepseek-v3': { provider: 'deepseek', model: 'deepseek-chat' },
  'deepseek-r1': { provider: 'deepseek', model: 'deepseek-reasoner' },
  'mistral-small': { provider: 'mistral', model: 'mistral-small-latest' },
  'mistral-large': { provider: 'mistral', model: 'mistral-large-latest' },
};

/** Output tokens assumed by the pre-dispatch estimate when max_output_tokens is not set. */
export const DEFAULT_OUTPUT_TOKENS_ESTIMATE = 1024;
/** Audio length assumed by the pre-dispatch estimate of transcribe.audio (the file is not probed). */
export const DEFAULT_AUDIO_SECONDS_ESTIMATE = 60;
