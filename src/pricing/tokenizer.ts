/**
 * Token estimator: the o200k_base tokenizer (the GPT-4o family's), used for every provider as a
 * close-enough estimate. The ranks come from js-tiktoken's `ranks/o200k_base` (loaded lazily on
 * first use, src/pricing/tokenizer-vocab.ts); the encoder is our own, because js-tiktoken's
 * byte-pair merge is quadratic in the length of a pre-tokenizer piece (worse, really: it re-joins
 * every candidate pair's bytes into a string key on every merge), so one long run without word
 * breaks held the event loop for seconds, and it is slow on ordinary text too
 * (docs/decisions/tokenizer.md).
 *
 * The counts are exactly js-tiktoken's `encode(text, [], []).length` — so never below it, which the
 * budget checks rely on (test/unit/pricing/tokenizer.test.ts checks it against js-tiktoken):
 *  - Pre-tokenization follows the same o200k pattern, so the pieces are the same
 *    (src/pricing/tokenizer-pieces.ts). Special-token text is ordinary text, as with
 *    `encode(text, [], [])`.
 *  - Each piece's UTF-8 bytes (TextEncoder's, so a lone surrogate is U+FFFD's bytes) are byte-pair
 *    merged with tiktoken's rule (src/pricing/tokenizer-merge.ts).
 *  - Piece counts are memoized in a bounded two-generation map (common words repeat across requests).
 */
import { encodePiece, warmUpMerge } from './tokenizer-merge';
import { asciiPieceEnd, forEachPiece } from './tokenizer-pieces';
import { buildVocab, type Vocab } from './tokenizer-vocab';

export const TOKENIZER_NAME = 'o200k_base';

let vocab: Vocab | null = null;

function loadVocab(): Vocab {
  if (vocab) return vocab;
  vocab = buildVocab();
  warmUpMerge(vocab);
  return vocab;
}

/**
 * Loads the ranks now, so that no governed call pays for it: an API process calls it before it
 * listens, otherwise the first estimate would hold the event loop for every request arriving
 * meanwhile.
 */
export function warmTokenizer(): void {
  loadVocab();
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

/**
 * Above this many characters a text is bounded, not counted: its UTF-8 byte length, which no BPE
 * count can exceed (every token is at least one byte). Counting exactly is linear but not cheap per
 * character; bounding keeps any one request's estimate so fast it never holds the event loop, at
 * the price of an over-estimate (an upper bound is what budgets need).
 */
export const EXACT_COUNT_MAX_CHARS = 256 * 1024;

/** Number of tokens in `text` (special-token text is treated as ordinary text). */
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

const utf8 = new TextEncoder();
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
