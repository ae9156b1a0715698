/**
 * Token estimator: js-tiktoken with the o200k_base ranks (the GPT-4o family tokenizer), used for
 * every provider as a close-enough estimate. The ranks (~2 MB) load lazily on first use.
 * `js-tiktoken/lite` + `js-tiktoken/ranks/o200k_base` both ship CommonJS builds (dist/*.cjs), so
 * this works under tsx, node and jest's CommonJS transform alike.
 */
import { Tiktoken, type TiktokenBPE } from 'js-tiktoken/lite';

// The ranks subpath has types only under node16/bundler resolution; load it with require.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const ranksModule = require('js-tiktoken/ranks/o200k_base') as TiktokenBPE & { default?: TiktokenBPE };
const o200k: TiktokenBPE = ranksModule.default ?? ranksModule;

export const TOKENIZER_NAME = 'o200k_base';

let encoder: Tiktoken | null = null;

function enc(): Tiktoken {
  if (!encoder) encoder = new Tiktoken(o200k);
  return encoder;
}

/** Number of tokens in `text` (special-token text is treated as ordinary text). */
export function countTokens(text: string): number {
  if (!text) return 0;
  return enc().encode(text, [], []).length;
}

/** Per-message overhead used when estimating chat input (role markers, separators). */
export const CHAT_MESSAGE_OVERHEAD_TOKENS = 3;

/** Estimated input tokens of a list of texts (chat messages or inputs). */
export function countChatTokens(texts: string[]): number {
  return texts.reduce((n, t) => n + countTokens(t) + CHAT_MESSAGE_OVERHEAD_TOKENS, 0);
}

/** The first `n` tokens of `text`, decoded (used by the emulator to honour max_tokens). */
export function truncateToTokens(text: string, n: number): string {
  const ids = enc().encode(text, [], []);
  if (ids.length <= n) return text;
  return enc().decode(ids.slice(0, Math.max(0, n)));
}
