/**
 * The byte-pair merge of one pre-tokenizer piece (src/pricing/tokenizer.ts), with tiktoken's rule:
 * a piece that is itself a token is one token; otherwise repeatedly merge the adjacent pair whose
 * concatenation has the lowest rank, leftmost on ties, until no adjacent pair is a token. Short
 * pieces use tiktoken's own loop over a small array (quadratic, bounded). Longer pieces — runs
 * without word breaks: repeated characters, long CJK or Thai phrases, minified blobs — use a binary
 * heap of (rank, position) over a linked list of parts, which makes the same merge at every step
 * (the least live heap entry is the lowest-ranked, leftmost pair) in O(n log n): js-tiktoken's merge
 * is quadratic there and held the event loop for seconds on one long run.
 */
import { NO_RANK, rankOf, type Vocab } from './tokenizer-vocab';

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

/** Places `key` at `start` of the min-heap heap[0, size) and moves it down to where it belongs. */
function siftDown(heap: Float64Array, size: number, start: number, key: number): void {
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
  // Heapify (O(n)).
  for (let start = (size >> 1) - 1; start >= 0; start--) siftDown(heap, size, start, heap[start]);
  let parts = n;
  while (size > 0) {
    const top = heap[0];
    size--;
    // Pop: move the last entry to the root and sift it down.
    if (size > 0) siftDown(heap, size, 0, heap[size]);
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
export function encodePiece(v: Vocab, piece: string, out?: number[]): number {
  const n = toBytes(piece);
  const bytes = pieceBytes;
  if (n > LONG_SCRATCH_MAX && pieceBytes.length > 4 * LONG_SCRATCH_MAX) pieceBytes = new Uint8Array(4096); // don't hold a huge buffer
  return encodeBytes(v, bytes, n, out);
}


const WARM_UP = ['a'.repeat(3000), ' '.repeat(700), '中文文本'.repeat(100), 'tokenizer', ' Hello', 'é😀'];

/**
 * Runs every path once, so that V8 has type feedback for all of it when it first optimizes a hot
 * loop: otherwise the first long piece (a long run of one character) deoptimizes over and over and
 * takes several times longer than the next. Costs a few ms, once.
 */
export function warmUpMerge(v: Vocab): void {
  for (const sample of WARM_UP) {
    encodePiece(v, sample);
    encodePiece(v, sample, []);
  }
}
