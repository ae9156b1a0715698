/**
 * The o200k_base vocabulary the token estimator (src/pricing/tokenizer.ts) encodes with: built from
 * js-tiktoken's `ranks/o200k_base`, and looked up by raw bytes.
 *
 * Ranks are looked up in an open-addressing hash table over the raw bytes: no string keys, and
 * typed arrays a fraction of the size of js-tiktoken's maps on the heap. Candidate spans longer than
 * the longest token are never looked up.
 */
import { readFileSync } from 'node:fs';
import type { TiktokenBPE } from 'js-tiktoken/lite';

/** Rank meaning "not a token" (above every real rank). */
export const NO_RANK = 0x7fffffff;

export interface Vocab {
  /** Every token's bytes, concatenated in rank order: token r is blob[offsets[r] .. offsets[r + 1]). */
  blob: Uint8Array;
  offsets: Int32Array;
  /** Open-addressing hash table over token bytes: slot → rank + 1 (0 = empty), and the slot's hash. */
  slots: Int32Array;
  slotHashes: Int32Array;
  mask: number;
  /** Rank of each two-byte token, indexed by (first byte << 8) | second byte; NO_RANK if none. */
  pairRanks: Int32Array;
  /** Longest token, in bytes. */
  maxTokenBytes: number;
  /** The o200k pre-tokenizer pattern (global, unicode). */
  pattern: RegExp;
}

// Hot loops use a module-level reference instead of the `Math` global: in a vm context (jest's test
// environment, for one) every global lookup goes through the context's interceptor, which made the
// merge several times slower there.
const imul = Math.imul;

/** FNV-1a over bytes[start, end). */
function hashBytes(bytes: Uint8Array, start: number, end: number): number {
  let h = 0x811c9dc5 | 0;
  for (let i = start; i < end; i++) h = imul(h ^ bytes[i], 0x01000193);
  return h;
}

const BASE64_VALUES = (() => {
  const t = new Int8Array(128).fill(-1);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  for (let i = 0; i < alphabet.length; i++) t[alphabet.charCodeAt(i)] = i;
  return t;
})();

/**
 * js-tiktoken's o200k_base ranks. Its CommonJS build is one `module.exports = {…};` of JSON, read
 * and parsed here rather than required: a required module stays in require.cache, and with it the
 * ranks string the vocabulary below is built from (the process's largest string after
 * start-up, kept for nothing).
 */
function readRanks(): TiktokenBPE {
  const file = require.resolve('js-tiktoken/ranks/o200k_base');
  const text = readFileSync(file, 'utf8');
  const json = text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1);
  const bpe = JSON.parse(json) as TiktokenBPE;
  if (typeof bpe.pat_str !== 'string' || typeof bpe.bpe_ranks !== 'string') throw new Error(`o200k ranks: ${file} is not in the expected form`);
  return bpe;
}

/**
 * Reads and builds the vocabulary. Takes a noticeable fraction of a second of one thread: callers
 * build it once (src/pricing/tokenizer.ts keeps it).
 */
export function buildVocab(): Vocab {
  const bpe = readRanks();
  const src = bpe.bpe_ranks;

  // js-tiktoken's compressed format: lines of `<name> <offset> <base64 token> <base64 token> …`, the
  // tokens of a line having consecutive ranks from <offset>. Decode every token into one byte blob,
  // in rank order: token r is blob[offsets[r] .. offsets[r + 1]) (a gap in the ranks is empty).
  const lines = src
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => {
      const a = line.indexOf(' ');
      const b = line.indexOf(' ', a + 1);
      const end = b < 0 ? line.length : b;
      return { line, offset: Number.parseInt(line.slice(a + 1, end), 10), start: end + 1 };
    })
    .sort((x, y) => x.offset - y.offset);
  let count = 0;
  for (const { line, offset, start } of lines) {
    let tokens = start < line.length ? 1 : 0;
    for (let i = line.indexOf(' ', start); i >= 0; i = line.indexOf(' ', i + 1)) tokens++;
    count = Math.max(count, offset + tokens);
  }
  const blob = new Uint8Array(src.length); // base64 is longer than the bytes it encodes
  const offsets = new Int32Array(count + 1);
  let rank = 0; // the next rank; offsets[0..rank] are set
  let used = 0;
  for (const { line, offset, start } of lines) {
    if (offset < rank || !Number.isFinite(offset)) throw new Error(`o200k ranks: bad offset ${offset}`);
    while (rank < offset) offsets[++rank] = used;
    if (start >= line.length) continue; // no tokens on this line
    let acc = 0;
    let bits = 0;
    for (let i = start; i <= line.length; i++) {
      const c = i < line.length ? line.charCodeAt(i) : 32;
      if (c === 32) {
        offsets[++rank] = used; // end of a token
        acc = 0;
        bits = 0;
        continue;
      }
      const d = c < 128 ? BASE64_VALUES[c] : -1;
      if (d < 0) continue; // '=' padding
      acc = ((acc << 6) | d) & 0xffffff;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        blob[used++] = (acc >> bits) & 0xff;
      }
    }
  }
  const packed = blob.slice(0, used);

  let size = 1;
  while (size < count * 2.5) size *= 2;
  const mask = size - 1;
  const slots = new Int32Array(size);
  const slotHashes = new Int32Array(size);
  const pairRanks = new Int32Array(65536).fill(NO_RANK);
  let maxTokenBytes = 0;
  for (let r = 0; r < count; r++) {
    const start = offsets[r];
    const end = offsets[r + 1];
    const len = end - start;
    if (len === 0) continue;
    if (len > maxTokenBytes) maxTokenBytes = len;
    if (len === 2) pairRanks[(packed[start] << 8) | packed[start + 1]] = r;
    const h = hashBytes(packed, start, end);
    let slot = (h ^ (h >>> 16)) & mask;
    while (slots[slot] !== 0) slot = (slot + 1) & mask;
    slots[slot] = r + 1;
    slotHashes[slot] = h;
  }
  // The contraction group only needs grouping, not capturing.
  const source = bpe.pat_str.replace(/\((?!\?)/g, '(?:');
  return { blob: packed, offsets, slots, slotHashes, mask, pairRanks, maxTokenBytes, pattern: new RegExp(source, 'gu') };
}

/** Rank of the token bytes[start, end), NO_RANK if those bytes are not a token. */
export function rankOf(v: Vocab, bytes: Uint8Array, start: number, end: number): number {
  const len = end - start;
  if (len > v.maxTokenBytes) return NO_RANK;
  const h = hashBytes(bytes, start, end);
  const { slots, slotHashes, offsets, blob, mask } = v;
  let slot = (h ^ (h >>> 16)) & mask;
  for (;;) {
    const entry = slots[slot];
    if (entry === 0) return NO_RANK;
    if (slotHashes[slot] === h) {
      const r = entry - 1;
      const off = offsets[r];
      if (offsets[r + 1] - off === len) {
        let i = 0;
        while (i < len && blob[off + i] === bytes[start + i]) i++;
        if (i === len) return r;
      }
    }
    slot = (slot + 1) & mask;
  }
}
