/**
 * Pre-tokenization for the token estimator (src/pricing/tokenizer.ts): cutting text into the pieces
 * the o200k pattern (`pat_str` of the ranks file) gives, so the pieces are js-tiktoken's.
 *
 * The o200k pattern, alternatives in order (first that matches wins):
 *   1. [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(contraction)?
 *   2. [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(contraction)?
 *   3. \p{N}{1,3}      4. ' '?[^\s\p{L}\p{N}]+[\r\n/]*      5. \s*[\r\n]+      6. \s+(?!\S)      7. \s+
 * The regex is the costliest step of a count in V8, so ASCII pieces are cut by a hand-written
 * scanner that follows the same rules; whenever the extent of a piece depends on a non-ASCII
 * character (in it or right after it), that one piece comes from the regex instead (the pattern
 * matches at every position, so the regex resumes exactly at the scanner's boundary). The tests
 * check the two agree.
 */
import type { Vocab } from './tokenizer-vocab';

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
export function asciiPieceEnd(t: string, i: number, n: number): number {
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
export function forEachPiece(v: Vocab, text: string, each: (piece: string | null, start: number) => boolean): void {
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
