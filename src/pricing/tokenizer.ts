/**
 * Token estimator: the o200k_base tokenizer (the GPT-4o family's), used for every provider as a
 * close-enough estimate. The ranks come from js-tiktoken's `ranks/o200k_base` (~2 MB, loaded lazily
 * on first use); the encoder is our own, because js-tiktoken's byte-pair merge is quadratic in the
 * length of a pre-tokenizer piece (worse, really: it re-joins every candidate pair's bytes into a
 * string key on every merge) — 10,000 repeated characters held the event loop for ~7 s.
 *
 * The counts are exactly js-tiktoken's `encode(text, [], []).length` — so never below it, which the
 * budget checks rely on (test/unit/pricing/tokenizer.test.ts checks it against js-tiktoken):
 *  - Pre-tokenization uses the same o200k pattern (`pat_str` from the ranks file), so the pieces are
 *    the same. Special-token text is ordinary text, as with `encode(text, [], [])`.
 *  - Each piece's UTF-8 bytes (TextEncoder's, so a lone surrogate is U+FFFD's bytes) are byte-pair
 *    merged with tiktoken's rule: a piece that is itself a token is one token; otherwise repeatedly
 *    merge the adjacent pair whose concatenation has the lowest rank, leftmost on ties, until no
 *    adjacent pair is a token. Pieces of ≤ SHORT_PIECE bytes use tiktoken's own loop over a small
 *    array (O(n²), bounded). Longer pieces — runs without word breaks: repeated characters, long CJK
 *    or Thai phrases, minified blobs — use a binary heap of (rank, position) over a linked list of
 *    parts, which makes the same merge at every step (the least live heap entry is the lowest-ranked,
 *    leftmost pair) in O(n log n) instead of O(n²).
 *  - Ranks are looked up in an open-addressing hash table over the raw bytes (no string keys), and
 *    candidate spans longer than the longest token (128 bytes) are never looked up.
 *  - Piece counts are memoized in a bounded two-generation map (common words repeat across requests).
 *
 * Figures (bench/tokenizer.ts): a 1 KB prompt in ~10–20 µs warm; 100,000 repeated 'a' in ~20–40 ms.
 */
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

/** FNV-1a over bytes[start, end). */
function hashBytes(bytes: Uint8Array, start: number, end: number): number {
  let h = 0x811c9dc5 | 0;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return h;
}

const BASE64_VALUES = (() => {
  const t = new Int8Array(128).fill(-1);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  for (let i = 0; i < alphabet.length; i++) t[alphabet.charCodeAt(i)] = i;
  return t;
})();

function loadVocab(): Vocab {
  if (vocab) return vocab;
  // The ranks subpath has types only under node16/bundler resolution; load it with require. It ships
  // a CommonJS build, so this works under tsx, node and jest's CommonJS transform alike.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require('js-tiktoken/ranks/o200k_base') as TiktokenBPE & { default?: TiktokenBPE };
  const bpe: TiktokenBPE = mod.default ?? mod;
  const src = bpe.bpe_ranks;

  // js-tiktoken's compressed format: lines of `<name> <offset> <base64 token> <base64 token> …`, the
  // tokens of a line having consecutive ranks from <offset>. Decode every token into one byte blob.
  const blob = new Uint8Array(src.length); // base64 is longer than the bytes it encodes
  const tokenStart: number[] = []; // by rank
  const tokenEnd: number[] = [];
  let used = 0;
  let maxRank = -1;
  for (const line of src.split('\n')) {
    if (!line) continue;
    const fields = line.split(' ');
    const offset = Number.parseInt(fields[1], 10);
    for (let f = 2; f < fields.length; f++) {
      const token = fields[f];
      const rank = offset + f - 2;
      tokenStart[rank] = used;
      let acc = 0;
      let bits = 0;
      for (let i = 0; i < token.length; i++) {
        const c = token.charCodeAt(i);
        const d = c < 128 ? BASE64_VALUES[c] : -1;
        if (d < 0) continue; // '=' padding
        acc = ((acc << 6) | d) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
          bits -= 8;
          blob[used++] = (acc >> bits) & 0xff;
        }
      }
      tokenEnd[rank] = used;
      if (rank > maxRank) maxRank = rank;
    }
  }
  const count = maxRank + 1;
  const offsets = new Int32Array(count + 1);
  const packed = new Uint8Array(used);
  let at = 0;
  for (let r = 0; r < count; r++) {
    offsets[r] = at;
    if (tokenStart[r] === undefined) continue; // a gap in the ranks: an empty, unreachable token
    packed.set(blob.subarray(tokenStart[r], tokenEnd[r]), at);
    at += tokenEnd[r] - tokenStart[r];
  }
  offsets[count] = at;

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
  return vocab;
}

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
    const rank = Math.floor(top / POS_SCALE);
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

const CACHE_GENERATION = 16_384;
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
    young.set(piece, c);
  }
  return c;
}

// ---------------------------------------------------------------------------------------------

/** Number of tokens in `text` (special-token text is treated as ordinary text). */
export function countTokens(text: string): number {
  if (!text) return 0;
  const v = loadVocab();
  const re = v.pattern;
  re.lastIndex = 0;
  let total = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) total += pieceTokens(v, m[0]);
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
  const re = v.pattern;
  re.lastIndex = 0;
  let used = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    const c = pieceTokens(v, m[0]);
    if (used + c <= limit) {
      used += c;
      continue;
    }
    const index = m.index;
    const ids: number[] = [];
    encodePiece(v, m[0], ids);
    re.lastIndex = 0;
    let head = text.slice(0, index);
    // js-tiktoken encodes a lone surrogate as U+FFFD's bytes, so its decoded prefix has U+FFFD there.
    if (SURROGATE.test(head)) head = utf8Decoder.decode(utf8.encode(head));
    return head + decodeRanks(v, ids.slice(0, limit - used));
  }
  return text;
}

/** Token ids of `text`: exactly js-tiktoken's `encode(text, [], [])` for o200k_base (for tests). */
export function encodeTokens(text: string): number[] {
  const v = loadVocab();
  const re = v.pattern;
  re.lastIndex = 0;
  const ids: number[] = [];
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) encodePiece(v, m[0], ids);
  return ids;
}
