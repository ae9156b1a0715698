/**
 * RFC 8785 JSON of jsonb values from the text PostgreSQL writes for them (`jsonb::text`):
 * `canonicalJson(JSON.parse(text))` without the parsed object tree, written as UTF-8 straight into
 * a chunk. Readers that write out a long run of stored records (`integrity verify`, an export's or
 * archive's events file and row parts) canonicalised every record by parsing it whole and writing
 * it again, most of the cost of a record's leaf text after its hashing; an export's row parts
 * then wrote each row as a string of member strings joined, and that string into the chunk.
 *
 * jsonb's text is already JSON with no duplicate members; what differs from RFC 8785 is its
 * whitespace, its member order (by length, then bytes) and its numbers (numeric's text, e.g.
 * `1.50`). Its strings are written as JSON.stringify writes them (the same escapes, lowercase
 * `\u00xx` below U+0020, nothing else escaped, and no lone surrogate can be stored), so strings and
 * member names are copied as they are; members are reordered by their names' UTF-16 code units
 * (names with an escape compared decoded); a number is copied when it is an integer of at most 15
 * digits (exact as a double, written the same), else written as JSON.stringify writes its double.
 *
 * One pass over the text: whitespace is dropped, strings and names are copied as they are (as
 * UTF-8), members are written in jsonb's order, and an object whose names are not in UTF-16 order
 * is reordered in place in the chunk once its members are written.
 * test/integration/db/canonical-jsonb.test.ts checks both entry points against
 * `canonicalJson(JSON.parse())` on PostgreSQL's own text of random JSON.
 */
import { decodeUtf8 } from '../utf8';
import { canonicalJson } from './canonical-json';

let src = '';
let at = 0;
/** Where no call is writing: the chunk is the caller's between calls. */
const NONE: Buffer = Buffer.alloc(0);
let out: Buffer = NONE;
let n = 0;
/** Per member of the objects being written: its name's start and end in the text, its start and end in the chunk, an escape in its name; and its name's key. */
let members = new Int32Array(5 * 64);
let keys = new Float64Array(64);
let top = 0;
let scratch = Buffer.alloc(1 << 16);
/** The members' order while an object is reordered. */
let order = new Int32Array(64);
/** Whether the last string copied had an escape (a name with one is decoded to compare). */
let escaped = false;

/** The NDJSON lines (each `\n`-terminated) of the canonical forms of jsonb texts. */
export function canonicalJsonbLines(texts: string[]): Buffer {
  let units = 0;
  for (const t of texts) units += t.length + 1;
  out = Buffer.allocUnsafe(units + (units >> 3) + 64);
  n = 0;
  try {
    for (let i = 0; i < texts.length; i++) {
      units -= texts[i].length + 1;
      // Room for the worst case (three bytes per unit); numbers written longer than their text reserve more.
      reserve(3 * texts[i].length + 1, units);
      src = texts[i];
      at = 0;
      top = 0;
      value();
      skipSpace();
      if (at !== src.length) throw new SyntaxError(`unexpected text at ${at} of a jsonb value`);
      out[n++] = 0x0a;
    }
    return out.subarray(0, n);
  } finally {
    src = '';
    out = NONE;
  }
}

/** Writes one jsonb text's canonical form at `n` of `out` (both set by the caller). */
function writeValue(text: string): void {
  reserve(3 * text.length + 1);
  src = text;
  at = 0;
  top = 0;
  value();
  skipSpace();
  if (at !== src.length) throw new SyntaxError(`unexpected text at ${at} of a jsonb value`);
}

/**
 * The canonical form of one jsonb text written at `chunk.n` of `chunk.buf` (grown when it lacks
 * room), both advanced: a writer of a line made of several pieces (a record's leaf,
 * src/events/ndjson-chunk.ts) writes the jsonb among them without a string of it.
 */
export function canonicalJsonbInto(chunk: { buf: Buffer; n: number }, text: string): void {
  out = chunk.buf;
  n = chunk.n;
  try {
    writeValue(text);
    chunk.buf = out;
    chunk.n = n;
  } finally {
    src = '';
    out = NONE;
  }
}

/** One value's chunk, kept between calls (a record's envelope and lifecycle are written one at a time); a large one is let go. */
let textChunk: Buffer = Buffer.alloc(4096);
const TEXT_CHUNK_KEPT = 1 << 20;

/** The canonical form of one jsonb text, as a string. */
export function canonicalJsonbText(text: string): string {
  out = textChunk;
  n = 0;
  try {
    writeValue(text);
    return decodeUtf8(out.subarray(0, n));
  } finally {
    if (out.length <= TEXT_CHUNK_KEPT) textChunk = out;
    src = '';
    out = NONE;
  }
}

function reserve(bytes: number, after = 0): void {
  if (out.length - n >= bytes) return;
  const grown = Buffer.allocUnsafe(Math.max(2 * out.length, n + bytes + after + (after >> 3)));
  out.copy(grown, 0, 0, n);
  out = grown;
}

function skipSpace(): void {
  let c = src.charCodeAt(at);
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = src.charCodeAt(++at);
}

function expect(code: number): void {
  skipSpace();
  if (src.charCodeAt(at) !== code) throw new SyntaxError(`expected '${String.fromCharCode(code)}' at ${at} of a jsonb value`);
  at += 1;
}

function value(): void {
  skipSpace();
  const c = src.charCodeAt(at);
  if (c === 0x22) string();
  else if (c === 0x7b) object();
  else if (c === 0x5b) array();
  else if (c === 0x74) literal('true');
  else if (c === 0x66) literal('false');
  else if (c === 0x6e) literal('null');
  else number();
}

/** Writes one UTF-16 unit at `i` (and its pair's low half) as UTF-8; returns the units used. */
function utf8(c: number, i: number): number {
  if (c < 0x800) {
    out[n++] = 0xc0 | (c >> 6);
    out[n++] = 0x80 | (c & 0x3f);
    return 1;
  }
  if (c >= 0xd800 && c <= 0xdbff) {
    const d = src.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) {
      const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
      out[n++] = 0xf0 | (cp >> 18);
      out[n++] = 0x80 | ((cp >> 12) & 0x3f);
      out[n++] = 0x80 | ((cp >> 6) & 0x3f);
      out[n++] = 0x80 | (cp & 0x3f);
      return 2;
    }
  }
  // A lone surrogate (jsonb stores none) as Buffer.write writes it: U+FFFD.
  if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
  out[n++] = 0xe0 | (c >> 12);
  out[n++] = 0x80 | ((c >> 6) & 0x3f);
  out[n++] = 0x80 | (c & 0x3f);
  return 1;
}

/** Copies a string token (quotes included) as it is; its end is the first quote not escaped. */
function string(): void {
  const start = at;
  escaped = false;
  // The copy's loop on locals: a module variable is loaded and stored again on each unit.
  const s = src;
  const o = out;
  const end = s.length;
  let i = at + 1;
  let k = n;
  o[k++] = 0x22;
  for (;;) {
    if (i >= end) throw new SyntaxError(`unterminated string at ${start} of a jsonb value`);
    const c = s.charCodeAt(i);
    if (c < 0x80 && c !== 0x22 && c !== 0x5c) {
      o[k++] = c;
      i += 1;
      continue;
    }
    if (c === 0x22) break;
    n = k;
    if (c === 0x5c) {
      escaped = true;
      out[n++] = 0x5c;
      const d = s.charCodeAt(i + 1);
      if (d < 0x80) out[n++] = d;
      else if (i + 1 < end) utf8(d, i + 1);
      i += 2;
    } else i += utf8(c, i);
    k = n;
  }
  o[k++] = 0x22;
  n = k;
  at = i + 1;
}

function ascii(s: string): void {
  // A number written longer than its text: room for it and, still, the rest of the text's worst case.
  reserve(s.length + 3 * (src.length - at) + 1);
  for (let i = 0; i < s.length; i++) out[n++] = s.charCodeAt(i);
}

function literal(word: string): void {
  if (!src.startsWith(word, at)) throw new SyntaxError(`unexpected text at ${at} of a jsonb value`);
  at += word.length;
  ascii(word);
}

function number(): void {
  const start = at;
  if (src.charCodeAt(at) === 0x2d) at += 1;
  const digitsFrom = at;
  let c = src.charCodeAt(at);
  while (c >= 0x30 && c <= 0x39) c = src.charCodeAt(++at);
  const digits = at - digitsFrom;
  if (digits > 0 && digits <= 15 && c !== 0x2e && c !== 0x65 && c !== 0x45 && (digits === 1 || src.charCodeAt(digitsFrom) !== 0x30)) {
    // Exact as a double, written the same; -0 is 0.
    if (digits === 1 && at - start === 2 && src.charCodeAt(digitsFrom) === 0x30) out[n++] = 0x30;
    else for (let i = start; i < at; i++) out[n++] = src.charCodeAt(i);
    return;
  }
  while ((c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d) c = src.charCodeAt(++at);
  const raw = src.slice(start, at);
  const v = raw === '' ? NaN : Number(raw);
  if (Number.isNaN(v)) throw new SyntaxError(`malformed number at ${start} of a jsonb value`);
  ascii(canonicalJson(v));
}

function array(): void {
  at += 1;
  out[n++] = 0x5b;
  skipSpace();
  if (src.charCodeAt(at) === 0x5d) {
    at += 1;
    out[n++] = 0x5d;
    return;
  }
  value();
  for (;;) {
    skipSpace();
    const c = src.charCodeAt(at++);
    if (c === 0x5d) break;
    if (c !== 0x2c) throw new SyntaxError(`expected ',' or ']' at ${at - 1} of a jsonb value`);
    out[n++] = 0x2c;
    value();
  }
  out[n++] = 0x5d;
}

/** A name's flags: an escape in it (decoded to compare), or a unit past ASCII in its first six (no key). */
const ESCAPED = 1;
const NO_KEY = 2;

/**
 * A name's first six units as one number (each unit plus one in a byte, a shorter name's missing
 * units zero): two names whose keys differ compare as their keys do, which settles most
 * comparisons of a row's column names without reading them again.
 */
function keyOf(from: number, to: number): number {
  let key = 0;
  for (let i = 0; i < 6; i++) {
    const c = from + i < to ? src.charCodeAt(from + i) : -1;
    if (c >= 0x7f) return -1;
    key = key * 256 + c + 1;
  }
  return key;
}

/** Member m's name against member k's, as their decoded strings compare by UTF-16 code units (< 0, 0, > 0). */
function compareNames(m: number, k: number): number {
  const flags = members[5 * m + 4] | members[5 * k + 4];
  if (flags === 0) {
    const d = keys[m] - keys[k];
    if (d !== 0) return d;
  }
  const a0 = members[5 * m] + 1;
  const a1 = members[5 * m + 1] - 1;
  const b0 = members[5 * k] + 1;
  const b1 = members[5 * k + 1] - 1;
  if ((flags & ESCAPED) !== 0) {
    const a = JSON.parse(src.slice(a0 - 1, a1 + 1)) as string;
    const b = JSON.parse(src.slice(b0 - 1, b1 + 1)) as string;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  const len = Math.min(a1 - a0, b1 - b0);
  for (let i = 0; i < len; i++) {
    const c = src.charCodeAt(a0 + i) - src.charCodeAt(b0 + i);
    if (c !== 0) return c;
  }
  return a1 - a0 - (b1 - b0);
}

function object(): void {
  at += 1;
  out[n++] = 0x7b;
  skipSpace();
  if (src.charCodeAt(at) === 0x7d) {
    at += 1;
    out[n++] = 0x7d;
    return;
  }
  const base = top;
  let ordered = true;
  for (;;) {
    skipSpace();
    if (src.charCodeAt(at) !== 0x22) throw new SyntaxError(`expected a member name at ${at} of a jsonb value`);
    if (5 * (top + 1) > members.length) {
      const grown = new Int32Array(2 * members.length);
      grown.set(members);
      members = grown;
      const more = new Float64Array(2 * keys.length);
      more.set(keys);
      keys = more;
    }
    const m = top++;
    const from = n;
    members[5 * m] = at;
    string();
    members[5 * m + 1] = at;
    const key = escaped ? -1 : keyOf(members[5 * m] + 1, at - 1);
    members[5 * m + 4] = escaped ? ESCAPED : key < 0 ? NO_KEY : 0;
    keys[m] = key;
    expect(0x3a);
    out[n++] = 0x3a;
    value();
    members[5 * m + 2] = from;
    members[5 * m + 3] = n;
    if (ordered && m > base && compareNames(m - 1, m) > 0) ordered = false;
    skipSpace();
    const c = src.charCodeAt(at++);
    if (c === 0x7d) break;
    if (c !== 0x2c) throw new SyntaxError(`expected ',' or '}' at ${at - 1} of a jsonb value`);
    out[n++] = 0x2c;
  }
  if (!ordered) reorder(base);
  top = base;
  out[n++] = 0x7d;
}

/** Bytes from which a member is moved by a copy call rather than a loop. */
const LONG_MEMBER = 96;

/** Rewrites the members from `base` to the top in their names' order, over the bytes they were written in. */
function reorder(base: number): void {
  const count = top - base;
  if (order.length < count) order = new Int32Array(2 * count);
  // A binary insertion sort: jsonb's order (by length, then bytes) is runs of names in order, a
  // linear one compared most members with most others.
  for (let i = 0; i < count; i++) {
    const m = base + i;
    let lo = 0;
    let hi = i;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compareNames(order[mid], m) > 0) hi = mid;
      else lo = mid + 1;
    }
    order.copyWithin(lo + 1, lo, i);
    order[lo] = m;
  }
  const from = members[5 * base + 2];
  const length = n - from;
  if (scratch.length < length) scratch = Buffer.allocUnsafe(Math.max(length, 2 * scratch.length));
  out.copy(scratch, 0, from, n);
  // Member by member: most are a few dozen bytes, less than a copy call costs; a long one (a
  // record's envelope, a nested document) by a copy call.
  const o = out;
  const t = scratch;
  let w = from;
  for (let i = 0; i < count; i++) {
    const m = order[i];
    if (i > 0) o[w++] = 0x2c;
    const end = members[5 * m + 3] - from;
    let r = members[5 * m + 2] - from;
    if (end - r > LONG_MEMBER) {
      t.copy(o, w, r, end);
      w += end - r;
    } else for (; r < end; r++) o[w++] = t[r];
  }
}
