/**
 * Token estimator: the o200k_base tokenizer (the GPT-4o family's), used for every provider as a
 * close-enough estimate. The ranks come from js-tiktoken's `ranks/o200k_base` (~2 MB, loaded lazily
 * on first use); the encoder is our own, because js-tiktoken's byte-pair merge is quadratic in the
 * length of a pre-tokenizer piece (worse, really: it re-joins every candidate pair's bytes into a
 * string key on every merge) — 10,000 repeated characters held the event loop for ~7 s — and costs
 * ~0.4 ms per KB of ordinary text.
 *
 * The counts are exactly js-tiktoken's `encode(text, [], []).length` — so never below it, which the
 * budget checks rely on (test/unit/pricing/tokenizer.test.ts checks it against js-tiktoken):
 *  - Pre-tokenization follows the same o200k pattern (`pat_str` from the ranks file), so the pieces
 *    are the same: a hand-written scanner for ASCII, the regex itself for the rest (see below).
 *    Special-token text is ordinary text, as with `encode(text, [], [])`.
 *  - Each piece's UTF-8 bytes (TextEncoder's, so a lone surrogate is U+FFFD's bytes) are byte-pair
 *    merged with tiktoken's rule: a piece that is itself a token is one token; otherwise repeatedly
 *    merge the adjacent pair whose concatenation has the lowest rank, leftmost on ties, until no
 *    adjacent pair is a token. Pieces of ≤ SHORT_PIECE bytes use tiktoken's own loop over a small
 *    array (O(n²), bounded). Longer pieces — runs without word breaks: repeated characters, long CJK
 *    or Thai phrases, minified blobs — use a binary heap of (rank, position) over a linked list of
 *    parts, which makes the same merge at every step (the least live heap entry is the lowest-ranked,
 *    leftmost pair) in O(n log n) instead of O(n²).
 *  - Ranks are looked up in an open-addressing hash table over the raw bytes (no string keys; ~7 MB
 *    of typed arrays where js-tiktoken's maps take ~65 MB of heap), and candidate spans longer than
 *    the longest token (128 bytes) are never looked up.
 *  - Piece counts are memoized in a bounded two-generation map (common words repeat across requests).
 *
 * Figures (bench/units/tokenizer.ts, on a loaded 2-CPU machine): a 1 KB prompt in ~11 µs warm (js-tiktoken:
 * ~420 µs); 100,000 repeated 'a' in ~30 ms; 1,000,000 in ~340 ms; first call (loading) ~100–150 ms.
 *
 * Size: one algorithm (the pre-tokenizer scanner and the byte-pair merge with its piece cache),
 * kept in one file so the invariants that make its counts exact can be read together.
 */
import { readFileSync } from 'node:fs';
import type { TiktokenBPE } from 'js-tiktoken/lite';

export const TOKENIZER_NAME = 'o200k_base';

/** Rank meaning "not a token" (above every real rank). */
const NO_RANK = 0x7fffffff;

interface Vocab {
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

let vocab: Vocab | null = null;

// Hot loops use a module-level reference instead of the `Math` global: in a vm context (jest's test
// environment, for one) every global lookup goes through the context's interceptor, which made the
// merge ~10× slower there.
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
 * 2.2 MB ranks string the vocabulary below is built from (the process's largest string after
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
 * Loads the ranks now (~0.1 s of one thread), so that no governed call pays for it: an API process
 * calls it before it listens, otherwise the first estimate would hold the event loop for every
 * request arriving meanwhile.
 */
export function warmTokenizer(): void {
  loadVocab();
}

function loadVocab(): Vocab {
  if (vocab) return vocab;
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
  vocab = { blob: packed, offsets, slots, slotHashes, mask, pairRanks, maxTokenBytes, pattern: new RegExp(source, 'gu') };
  // Run every path once, so that V8 has type feedback for all of it when it first optimizes a hot
  // loop: otherwise the first long piece (e.g. 100,000 × 'a') deoptimizes over and over and takes
  // several times longer than the next. Costs a few ms, once.
  for (const sample of WARM_UP) {
    encodePiece(vocab, sample);
    encodePiece(vocab, sample, []);
  }
  return vocab;
}

const WARM_UP = ['a'.repeat(3000), ' '.repeat(700), '中文文本'.repeat(100), 'tokenizer', ' Hello', 'é😀'];

/** Rank of the token bytes[start, end), NO_RANK if those bytes are not a token. */
function rankOf(v: Vocab, bytes: Uint8Array, start: number, end: number): number {
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

// ---------------------------------------------------------------------------------------------
// Byte-pair merge of one piece's bytes.

/** Pieces of at most this many bytes use the simple array merge; longer ones the heap merge. */
const SHORT_PIECE = 32;

const shortStarts = new Int32Array(SHORT_PIECE + 2);
const shortRanks = new Int32Array(SHORT_PIECE + 2);

/**
 * tiktoken's `_byte_pair_merge`, for short pieces: `starts[i]` is where part i begins (the last entry
 * is the end of the piece), `ranks[i]` the rank of part i merged with part i + 1; each step merges the
 * lowest-ranked pair (leftmost on ties) until no adjacent pair is a token. O(n²), n ≤ SHORT_PIECE.
 * Returns the number of parts (tokens); if `out` is given, pushes the parts' ranks onto it.
 */
function mergeShort(v: Vocab, bytes: Uint8Array, n: number, out?: number[]): number {
  const starts = shortStarts;
  const ranks = shortRanks;
  const pairRanks = v.pairRanks;
  for (let i = 0; i <= n; i++) starts[i] = i;
  for (let i = 0; i < n - 1; i++) ranks[i] = pairRanks[(bytes[i] << 8) | bytes[i + 1]];
  ranks[n - 1] = NO_RANK;
  ranks[n] = NO_RANK;
  let len = n + 1; // entries; parts = len - 1
  for (;;) {
    let min = NO_RANK;
    let at = -1;
    for (let i = 0; i < len - 1; i++) {
      if (ranks[i] < min) {
        min = ranks[i];
        at = i;
      }
    }
    if (at < 0) break;
    // Merge part `at` with part `at + 1`: the two pair ranks that change, then drop entry at + 1.
    if (at > 0) ranks[at - 1] = at + 2 < len ? rankOf(v, bytes, starts[at - 1], starts[at + 2]) : NO_RANK;
    ranks[at] = at + 3 < len ? rankOf(v, bytes, starts[at], starts[at + 3]) : NO_RANK;
    for (let i = at + 1; i < len - 1; i++) {
      starts[i] = starts[i + 1];
      ranks[i] = ranks[i + 1];
    }
    len--;
  }
  if (out) for (let i = 0; i < len - 1; i++) out.push(rankOf(v, bytes, starts[i], starts[i + 1]));
  return len - 1;
}

const POS_SCALE = 2 ** 32; // heap key = rank * POS_SCALE + start position (both < 2^32, key < 2^53)

/** Scratch arrays for mergeLong, reused for pieces up to their size (larger pieces allocate). */
let longCapacity = 0;
let longNext = new Int32Array(0);
let longPrev = new Int32Array(0);
let longRank = new Int32Array(0);
let longHeap = new Float64Array(0);
const LONG_SCRATCH_MAX = 1 << 14;

/**
 * The same merge for long pieces, in O(n log n): parts are a linked list over start positions, and a
 * binary min-heap holds (rank, position) keys of candidate pairs. An entry is stale when its part has
 * been merged away (pairRank -1) or its pair rank has changed since — a pair's rank changes only when
 * its span does, and different spans are different tokens, so a stale entry never matches the live
 * rank. The least live entry is exactly the pair tiktoken's loop picks (lowest rank, leftmost).
 */
function mergeLong(v: Vocab, bytes: Uint8Array, n: number, out?: number[]): number {
  let next: Int32Array, prev: Int32Array, pairRank: Int32Array, heap: Float64Array;
  if (n <= LONG_SCRATCH_MAX) {
    if (longCapacity < n) {
      longCapacity = Math.min(LONG_SCRATCH_MAX, Math.max(n, 2 * longCapacity));
      longNext = new Int32Array(longCapacity);
      longPrev = new Int32Array(longCapacity);
      longRank = new Int32Array(longCapacity);
      longHeap = new Float64Array(3 * longCapacity);
    }
    next = longNext;
    prev = longPrev;
    pairRank = longRank;
    heap = longHeap;
  } else {
    next = new Int32Array(n);
    prev = new Int32Array(n);
    pairRank = new Int32Array(n);
    heap = new Float64Array(3 * n); // ≤ n - 1 initial entries + ≤ 2 per merge, ≤ n - 1 merges
  }
  const pairRanks = v.pairRanks;
  let size = 0;
  for (let i = 0; i < n; i++) {
    next[i] = i + 1;
    prev[i] = i - 1;
    const r = i + 1 < n ? pairRanks[(bytes[i] << 8) | bytes[i + 1]] : NO_RANK;
    pairRank[i] = r;
    if (r !== NO_RANK) heap[size++] = r * POS_SCALE + i;
  }
  // Heapify (O(n)); the sift-down and sift-up loops are written out inline below, for speed.
  for (let start = (size >> 1) - 1; start >= 0; start--) {
    const key = heap[start];
    let i = start;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= size) break;
      if (child + 1 < size && heap[child + 1] < heap[child]) child++;
      if (heap[child] >= key) break;
      heap[i] = heap[child];
      i = child;
    }
    heap[i] = key;
  }
  let parts = n;
  while (size > 0) {
    const top = heap[0];
    size--;
    if (size > 0) {
      // Pop: move the last entry to the root and sift it down.
      const key = heap[size];
      let i = 0;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= size) break;
        if (child + 1 < size && heap[child + 1] < heap[child]) child++;
        if (heap[child] >= key) break;
        heap[i] = heap[child];
        i = child;
      }
      heap[i] = key;
    }
    const rank = (top / POS_SCALE) | 0; // < 2^31: the fraction is position / 2^32
    const p = top - rank * POS_SCALE;
    if (pairRank[p] !== rank) continue; // stale
    // Merge part p with the next part q.
    const q = next[p];
    const after = next[q];
    pairRank[q] = -1; // merged away
    next[p] = after;
    if (after < n) prev[after] = p;
    parts--;
    // New candidate pairs: (p, after) and (before, p); each replaces the pair's previous entry.
    const before = prev[p];
    for (let k = 0; k < 2; k++) {
      const at = k === 0 ? p : before;
      if (at < 0) break;
      const r = k === 0 ? (after < n ? rankOf(v, bytes, p, next[after]) : NO_RANK) : rankOf(v, bytes, before, after);
      pairRank[at] = r;
      if (r === NO_RANK) continue;
      const key = r * POS_SCALE + at;
      let i = size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (heap[parent] <= key) break;
        heap[i] = heap[parent];
        i = parent;
      }
      heap[i] = key;
    }
  }
  if (out) for (let p = 0; p < n; p = next[p]) out.push(rankOf(v, bytes, p, next[p]));
  return parts;
}

/** Tokens of bytes[0, n); pushes their ranks onto `out` if given. */
function encodeBytes(v: Vocab, bytes: Uint8Array, n: number, out?: number[]): number {
  const whole = rankOf(v, bytes, 0, n);
  if (whole !== NO_RANK) {
    if (out) out.push(whole);
    return 1;
  }
  return n <= SHORT_PIECE ? mergeShort(v, bytes, n, out) : mergeLong(v, bytes, n, out);
}

const utf8 = new TextEncoder();
let pieceBytes = new Uint8Array(4096);

/**
 * Writes `piece`'s UTF-8 bytes into `pieceBytes` (grown if needed) and returns how many. Uses
 * TextEncoder for non-ASCII text, as js-tiktoken does (a lone surrogate becomes U+FFFD's bytes).
 */
function toBytes(piece: string): number {
  const len = piece.length;
  if (len * 3 > pieceBytes.length) pieceBytes = new Uint8Array(Math.max(len * 3, pieceBytes.length * 2));
  const buf = pieceBytes;
  for (let i = 0; i < len; i++) {
    const c = piece.charCodeAt(i);
    if (c >= 0x80) return utf8.encodeInto(piece, buf).written;
    buf[i] = c;
  }
  return len;
}

/** Tokens of one piece; pushes their ranks onto `out` if given. */
function encodePiece(v: Vocab, piece: string, out?: number[]): number {
  const n = toBytes(piece);
  const bytes = pieceBytes;
  if (n > LONG_SCRATCH_MAX && pieceBytes.length > 4 * LONG_SCRATCH_MAX) pieceBytes = new Uint8Array(4096); // don't hold a huge buffer
  return encodeBytes(v, bytes, n, out);
}

// ---------------------------------------------------------------------------------------------
// Memo of piece → token count: two generations of at most CACHE_GENERATION entries each. Lookups
// try the young map, then the old one (promoting a hit); when the young map fills, it becomes the
// old one and the previous old one is dropped — recently used pieces survive, memory is bounded.

const CACHE_GENERATION = 32_768;
const CACHE_MAX_PIECE_CHARS = 64;
let young = new Map<string, number>();
let old = new Map<string, number>();

function pieceTokens(v: Vocab, piece: string): number {
  if (piece.length === 1 && piece.charCodeAt(0) < 0x80) return 1; // every byte is a token
  let c = young.get(piece);
  if (c !== undefined) return c;
  c = old.get(piece);
  if (c === undefined) c = encodePiece(v, piece);
  if (piece.length <= CACHE_MAX_PIECE_CHARS) {
    if (young.size >= CACHE_GENERATION) {
      old = young;
      young = new Map();
    }
    young.set(detached(piece), c);
  }
  return c;
}

/**
 * A copy of `piece` that does not keep the text it was cut from alive. V8 makes a substring of 13 or
 * more characters a slice of its parent string, so a memo key could otherwise pin a whole request
 * body; concatenating and slicing again flattens the piece into a string of its own.
 */
function detached(piece: string): string {
  return piece.length < 13 ? piece : (' ' + piece).slice(1);
}

// ---------------------------------------------------------------------------------------------
// Pre-tokenization. The o200k pattern, alternatives in order (first that matches wins):
//   1. [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(contraction)?
//   2. [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(contraction)?
//   3. \p{N}{1,3}      4. ' '?[^\s\p{L}\p{N}]+[\r\n/]*      5. \s*[\r\n]+      6. \s+(?!\S)      7. \s+
// The regex costs ~20 µs per KB in V8, so ASCII pieces are cut by a hand-written scanner that follows
// the same rules; whenever the extent of a piece depends on a non-ASCII character (in it or right
// after it), that one piece comes from the regex instead (the pattern matches at every position, so
// the regex resumes exactly at the scanner's boundary). The tests check the two agree.

const OTHER = 0; // not a letter, digit or whitespace (punctuation, symbols, control characters)
const UPPER = 1;
const LOWER = 2;
const DIGIT = 3;
const SPACE = 4; // U+0020, the only character the optional space of alternative 4 takes
const BLANK = 5; // \t \v \f: whitespace other than newlines and U+0020
const NEWLINE = 6; // \r \n
const NON_ASCII = 7;

const ASCII_CLASS = (() => {
  const t = new Uint8Array(128); // OTHER
  for (let c = 65; c <= 90; c++) t[c] = UPPER;
  for (let c = 97; c <= 122; c++) t[c] = LOWER;
  for (let c = 48; c <= 57; c++) t[c] = DIGIT;
  t[32] = SPACE;
  t[9] = BLANK;
  t[11] = BLANK;
  t[12] = BLANK;
  t[10] = NEWLINE;
  t[13] = NEWLINE;
  return t;
})();

function classAt(t: string, i: number): number {
  const c = t.charCodeAt(i);
  return c < 128 ? ASCII_CLASS[c] : NON_ASCII;
}

/** Alternatives 1–2 from `i` (a letter): uppers, then lowers, then an optional contraction. */
function lettersEnd(t: string, i: number, n: number): number {
  let j = i;
  let k = NON_ASCII;
  while (j < n && (k = classAt(t, j)) === UPPER) j++;
  if (j < n && k === LOWER) while (++j < n && (k = classAt(t, j)) === LOWER);
  if (j < n && k === NON_ASCII) return -1; // a non-ASCII letter or mark would extend the run
  if (j + 1 < n && t.charCodeAt(j) === 39 /* ' */) {
    const c1 = t.charCodeAt(j + 1) | 0x20; // ASCII lower case (non-letters never match below)
    if (c1 === 0x73 /* s */ || c1 === 0x74 /* t */ || c1 === 0x6d /* m */ || c1 === 0x64 /* d */) return j + 2;
    if (j + 2 < n) {
      const c2 = t.charCodeAt(j + 2) | 0x20;
      if ((c1 === 0x72 /* r */ || c1 === 0x76 /* v */) && c2 === 0x65 /* e */) return j + 3;
      if (c1 === 0x6c /* l */ && c2 === 0x6c) return j + 3;
    }
  }
  return j;
}

/** Alternative 4 from `i` (an OTHER character): OTHER characters, then any \r \n /. */
function othersEnd(t: string, i: number, n: number): number {
  let j = i + 1;
  let k = NON_ASCII;
  while (j < n && (k = classAt(t, j)) === OTHER) j++;
  if (j < n && k === NON_ASCII) return -1; // could be another OTHER character
  for (; j < n; j++) {
    const c = t.charCodeAt(j);
    if (c !== 10 && c !== 13 && c !== 47) break;
  }
  return j;
}

/** Alternatives 5–7 from `i` (whitespace). */
function whitespaceEnd(t: string, i: number, n: number): number {
  let j = i;
  let lastNewline = -1;
  for (; j < n; j++) {
    const k = classAt(t, j);
    if (k === NEWLINE) lastNewline = j;
    else if (k === NON_ASCII) return -1; // could be more whitespace
    else if (k !== SPACE && k !== BLANK) break;
  }
  if (lastNewline >= 0) return lastNewline + 1; // \s*[\r\n]+ backtracks to the last newline
  if (j === n) return n; // \s+(?!\S) at the end
  return j - i >= 2 ? j - 1 : j; // \s+(?!\S) leaves the last one for the next word; else \s+
}

/** End of the ASCII piece starting at `i`, or -1 if it takes the regex to decide. */
function asciiPieceEnd(t: string, i: number, n: number): number {
  const k = classAt(t, i);
  if (k === UPPER || k === LOWER) return lettersEnd(t, i, n);
  if (k === DIGIT) {
    let j = i + 1;
    while (j < n && j < i + 3) {
      const k1 = classAt(t, j);
      if (k1 === DIGIT) j++;
      else if (k1 === NON_ASCII) return -1; // a non-ASCII digit would extend the run
      else break;
    }
    return j;
  }
  if (k === NON_ASCII) return -1;
  if (k !== NEWLINE && i + 1 < n) {
    // OTHER, SPACE or BLANK: the optional leading character of alternatives 1–2.
    const k1 = classAt(t, i + 1);
    if (k1 === UPPER || k1 === LOWER) return lettersEnd(t, i + 1, n);
    if (k1 === NON_ASCII) return -1;
    if (k === SPACE && k1 === OTHER) return othersEnd(t, i + 1, n);
  }
  if (k === OTHER) return othersEnd(t, i, n);
  return whitespaceEnd(t, i, n);
}

/**
 * Calls `each(piece, start)` for the pre-tokenizer pieces of `text` in order, until it returns false.
 * Single ASCII characters (one token each) are reported as `null` pieces, without a string.
 */
function forEachPiece(v: Vocab, text: string, each: (piece: string | null, start: number) => boolean): void {
  const n = text.length;
  const re = v.pattern;
  let i = 0;
  while (i < n) {
    let j = asciiPieceEnd(text, i, n);
    let piece: string | null;
    if (j >= 0) {
      piece = j === i + 1 ? null : text.substring(i, j);
    } else {
      re.lastIndex = i;
      piece = re.exec(text)![0]; // matches at i: the pattern matches at every position
      j = i + piece.length;
    }
    if (!each(piece, i)) return;
    i = j;
  }
}

/** Number of tokens in `text` (special-token text is treated as ordinary text). */
/**
 * Above this many characters a text is bounded, not counted: its UTF-8 byte length, which no BPE
 * count can exceed (every token is at least one byte). Counting exactly costs up to ~350 ns per
 * character; bounding keeps any one request's estimate under ~1 ms per MB so it never holds the
 * event loop, at the price of an over-estimate (an upper bound is what budgets need).
 */
export const EXACT_COUNT_MAX_CHARS = 256 * 1024;

export function countTokens(text: string): number {
  if (!text) return 0;
  if (text.length > EXACT_COUNT_MAX_CHARS) return Buffer.byteLength(text, 'utf8');
  const v = loadVocab();
  const n = text.length;
  const re = v.pattern;
  let total = 0;
  let i = 0;
  while (i < n) {
    // forEachPiece, inlined: this is the per-request hot path.
    let j = asciiPieceEnd(text, i, n);
    if (j === i + 1) total += 1; // a single ASCII character: every byte is a token
    else if (j >= 0) total += pieceTokens(v, text.substring(i, j));
    else {
      re.lastIndex = i;
      const piece = re.exec(text)![0];
      j = i + piece.length;
      total += pieceTokens(v, piece);
    }
    i = j;
  }
  return total;
}

/** Per-message overhead used when estimating chat input (role markers, separators). */
export const CHAT_MESSAGE_OVERHEAD_TOKENS = 3;

/** Estimated input tokens of a list of texts (chat messages or inputs). */
export function countChatTokens(texts: string[]): number {
  return texts.reduce((n, t) => n + countTokens(t) + CHAT_MESSAGE_OVERHEAD_TOKENS, 0);
}

const utf8Decoder = new TextDecoder('utf-8');
const SURROGATE = /[\ud800-\udfff]/;

/** Decoded bytes of the tokens `ranks` (a cut inside a character decodes to U+FFFD, as in js-tiktoken). */
function decodeRanks(v: Vocab, ranks: number[]): string {
  let len = 0;
  for (const r of ranks) len += v.offsets[r + 1] - v.offsets[r];
  const bytes = new Uint8Array(len);
  let at = 0;
  for (const r of ranks) {
    bytes.set(v.blob.subarray(v.offsets[r], v.offsets[r + 1]), at);
    at += v.offsets[r + 1] - v.offsets[r];
  }
  return utf8Decoder.decode(bytes);
}

/**
 * The first `n` tokens of `text`, decoded (used by the emulator to honour max_tokens): the same
 * string as decoding js-tiktoken's first `n` token ids. Counts whole pieces (memoized) up to the one
 * where the budget runs out, and encodes only that piece to token ids.
 */
export function truncateToTokens(text: string, n: number): string {
  const limit = n > 0 ? Math.floor(n) : 0;
  const v = loadVocab();
  let used = 0;
  let result = text;
  forEachPiece(v, text, (piece, start) => {
    let ids: number[] | null = null;
    let c: number;
    if (piece === null) c = 1;
    else if (piece.length > CACHE_MAX_PIECE_CHARS) c = encodePiece(v, piece, (ids = [])); // not memoized: encode once
    else c = pieceTokens(v, piece);
    if (used + c <= limit) {
      used += c;
      return true;
    }
    if (!ids) encodePiece(v, piece ?? text[start], (ids = []));
    let head = text.slice(0, start);
    // js-tiktoken encodes a lone surrogate as U+FFFD's bytes, so its decoded prefix has U+FFFD there.
    if (SURROGATE.test(head)) head = utf8Decoder.decode(utf8.encode(head));
    result = head + decodeRanks(v, ids.slice(0, limit - used));
    return false;
  });
  return result;
}

/** Token ids of `text`: exactly js-tiktoken's `encode(text, [], [])` for o200k_base (for tests). */
export function encodeTokens(text: string): number[] {
  const v = loadVocab();
  const ids: number[] = [];
  forEachPiece(v, text, (piece, start) => {
    encodePiece(v, piece ?? text[start], ids);
    return true;
  });
  return ids;
}
