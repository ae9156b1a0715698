/** Deterministic content: replies, embeddings, images and audio derived from a hash of the input. */
import { createHash } from 'node:crypto';
import { countTokens, truncateToTokens } from '../src/pricing/tokenizer';

export const hashHex = (s: string) => createHash('sha256').update(s).digest('hex');

const WORDS = [
  'amber', 'basalt', 'cedar', 'delta', 'ember', 'fjord', 'granite', 'harbor', 'indigo', 'juniper', 'kestrel', 'lumen',
  'meadow', 'nimbus', 'opal', 'prairie', 'quartz', 'river', 'summit', 'tundra', 'umber', 'vale', 'willow', 'zephyr',
];

/** Output of a `fill_output` reply when the request sets no ceiling (a model talking at length). */
export const FILL_DEFAULT_TOKENS = 4096;

/**
 * The emulated reply to a prompt: an echo of its start plus hash-chosen words, cut to maxTokens.
 * `fill`: as many words as it takes to use the whole ceiling (the worst case a cap must survive).
 */
export function replyFor(prompt: string, maxTokens?: number, fill = false): { text: string; truncated: boolean } {
  const h = hashHex(prompt);
  const echo = prompt.replace(/\[\[emulator:[^\]]*\]\]/g, '').replace(/\s+/g, ' ').trim().split(' ').slice(0, 12).join(' ');
  const words = fill ? Math.min(maxTokens && maxTokens > 0 ? maxTokens : FILL_DEFAULT_TOKENS, 1_000_000) + 12 : 12;
  const extra = Array.from({ length: words }, (_, i) => WORDS[parseInt(h.slice((i % 12) * 2, (i % 12) * 2 + 2), 16) % WORDS.length]);
  const full = `Emulated reply ${h.slice(0, 8)}: you said "${echo}". ${extra.join(' ')}.`;
  if (maxTokens !== undefined && maxTokens > 0 && countTokens(full) > maxTokens) return { text: truncateToTokens(full, maxTokens), truncated: true };
  return { text: full, truncated: false };
}

/** Output tokens of a reply as a provider reports them: never above the request's ceiling (re-encoding a cut text can add one). */
export function outputTokensOf(text: string, maxTokens?: number): number {
  const n = countTokens(text);
  return typeof maxTokens === 'number' && maxTokens > 0 ? Math.min(n, maxTokens) : n;
}

/** Splits text into stream pieces (one word with its trailing space each). */
export function chunksOf(text: string): string[] {
  return text.match(/\S+\s*/g) ?? [text];
}

/** A unit-length deterministic embedding of `dims` dimensions. */
export function embeddingFor(text: string, dims = 16): number[] {
  const out: number[] = [];
  let h = hashHex(text);
  while (out.length < dims) {
    for (let i = 0; i + 4 <= h.length && out.length < dims; i += 4) out.push(parseInt(h.slice(i, i + 4), 16) / 0xffff - 0.5);
    h = hashHex(h);
  }
  const norm = Math.sqrt(out.reduce((s, v) => s + v * v, 0)) || 1;
  return out.map((v) => Math.round((v / norm) * 1e6) / 1e6);
}

/** Float32 little-endian base64 (OpenAI `encoding_format: base64`). */
export function embeddingBase64(values: number[]): string {
  return Buffer.from(new Float32Array(values).buffer).toString('base64');
}

/** A valid 1x1 PNG (color from the hash). */
export function pngFor(prompt: string): Buffer {
  // Fixed 1x1 RGBA PNG; the prompt hash goes into a tEXt-free comment-less variant: same bytes per prompt.
  void prompt;
  return Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
    'base64',
  );
}

/** Deterministic "audio" bytes: an ID3-tagged MP3-looking buffer, ~1 byte per 4 characters + header. */
export function audioFor(text: string): Buffer {
  const body = Buffer.from(hashHex(text).repeat(Math.max(1, Math.ceil(text.length / 256))), 'hex');
  return Buffer.concat([Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00', 'latin1'), body]);
}

/** Transcript of uploaded bytes: the bytes themselves when they are readable text, else a description. */
export function transcriptOf(data: Buffer, filename: string): string {
  const text = data.toString('utf8');
  const printable = text.length > 0 && /^[\p{L}\p{N}\p{P}\p{Zs}\n\r\t$+<=>^`|~]*$/u.test(text);
  if (printable) return text.trim();
  return `Emulated transcript ${hashHex(data.toString('base64')).slice(0, 8)} of ${filename} (${data.length} bytes).`;
}

/** Seconds of audio the emulator bills for an upload (16 kB per second, at least one). */
export const audioSecondsOf = (data: Buffer) => Math.max(1, Math.ceil(data.length / 16000));
