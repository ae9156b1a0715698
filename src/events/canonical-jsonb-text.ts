/**
 * RFC 8785 JSON of a jsonb value from the text PostgreSQL writes for it (`jsonb::text`):
 * `canonicalJson(JSON.parse(text))` without the parsed object tree. Readers that write out a long
 * run of stored records (`integrity verify`, an export's or archive's events file and row parts) canonicalised
 * every record's envelope and lifecycle by parsing them whole and writing them again, most of
 * the cost of a record's leaf text after its hashing.
 *
 * jsonb's text is already JSON with no duplicate members; what differs from RFC 8785 is its
 * whitespace, its member order (by length, then bytes) and its numbers (numeric's text, e.g.
 * `1.50`). Its strings are written as JSON.stringify writes them (the same escapes, lowercase
 * `\u00xx` below U+0020, nothing else escaped, and no lone surrogate can be stored), so strings and
 * member names are copied as they are; members are reordered by their names' UTF-16 code units
 * (names with an escape compared decoded); a number is copied when it is an integer of at most 15
 * digits (exact as a double, written the same), else written as JSON.stringify writes its double.
 * test/unit/events/canonical-jsonb-text.test.ts checks it against `canonicalJson(JSON.parse())`
 * on PostgreSQL's own text of random JSON.
 */
import { canonicalJson } from './canonical-json';

let src = '';
let at = 0;

export function canonicalJsonbText(text: string): string {
  src = text;
  at = 0;
  const out = value();
  skipSpace();
  if (at !== src.length) throw new SyntaxError(`unexpected text at ${at} of a jsonb value`);
  src = '';
  return out;
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

function value(): string {
  skipSpace();
  const c = src.charCodeAt(at);
  if (c === 0x22) return string();
  if (c === 0x7b) return object();
  if (c === 0x5b) return array();
  if (c === 0x74) return literal('true');
  if (c === 0x66) return literal('false');
  if (c === 0x6e) return literal('null');
  return number();
}

/** A string token as written (quotes included): its end is the first quote not escaped. */
function string(): string {
  const start = at;
  let end = src.indexOf('"', start + 1);
  for (;;) {
    if (end < 0) throw new SyntaxError(`unterminated string at ${start} of a jsonb value`);
    let slashes = 0;
    while (src.charCodeAt(end - 1 - slashes) === 0x5c) slashes += 1;
    if (slashes % 2 === 0) break;
    end = src.indexOf('"', end + 1);
  }
  at = end + 1;
  return src.slice(start, at);
}

function literal(word: string): string {
  if (!src.startsWith(word, at)) throw new SyntaxError(`unexpected text at ${at} of a jsonb value`);
  at += word.length;
  return word;
}

function number(): string {
  const start = at;
  if (src.charCodeAt(at) === 0x2d) at += 1;
  const digitsFrom = at;
  let c = src.charCodeAt(at);
  while (c >= 0x30 && c <= 0x39) c = src.charCodeAt(++at);
  const digits = at - digitsFrom;
  if (digits > 0 && digits <= 15 && c !== 0x2e && c !== 0x65 && c !== 0x45 && (digits === 1 || src.charCodeAt(digitsFrom) !== 0x30)) {
    const raw = src.slice(start, at);
    return raw === '-0' ? '0' : raw;
  }
  while ((c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d) c = src.charCodeAt(++at);
  const raw = src.slice(start, at);
  const n = raw === '' ? NaN : Number(raw);
  if (Number.isNaN(n)) throw new SyntaxError(`malformed number at ${start} of a jsonb value`);
  return canonicalJson(n);
}

function array(): string {
  at += 1;
  skipSpace();
  if (src.charCodeAt(at) === 0x5d) {
    at += 1;
    return '[]';
  }
  let out = `[${value()}`;
  for (;;) {
    skipSpace();
    const c = src.charCodeAt(at++);
    if (c === 0x5d) return `${out}]`;
    if (c !== 0x2c) throw new SyntaxError(`expected ',' or ']' at ${at - 1} of a jsonb value`);
    out += `,${value()}`;
  }
}

/** A member name as its string compares: the text between the quotes, decoded where it has an escape. */
const nameOf = (token: string) => (token.includes('\\') ? (JSON.parse(token) as string) : token.slice(1, -1));

function object(): string {
  at += 1;
  skipSpace();
  if (src.charCodeAt(at) === 0x7d) {
    at += 1;
    return '{}';
  }
  const names: string[] = [];
  const members: string[] = [];
  let ordered = true;
  for (;;) {
    skipSpace();
    if (src.charCodeAt(at) !== 0x22) throw new SyntaxError(`expected a member name at ${at} of a jsonb value`);
    const token = string();
    expect(0x3a);
    const name = nameOf(token);
    if (ordered && names.length > 0 && names[names.length - 1] > name) ordered = false;
    names.push(name);
    members.push(`${token}:${value()}`);
    skipSpace();
    const c = src.charCodeAt(at++);
    if (c === 0x7d) break;
    if (c !== 0x2c) throw new SyntaxError(`expected ',' or '}' at ${at - 1} of a jsonb value`);
  }
  // By the names' UTF-16 code units, as Array.prototype.sort compares them (an insertion sort: a few members).
  if (!ordered) {
    for (let i = 1; i < names.length; i++) {
      const name = names[i];
      const member = members[i];
      let k = i - 1;
      for (; k >= 0 && names[k] > name; k--) {
        names[k + 1] = names[k];
        members[k + 1] = members[k];
      }
      names[k + 1] = name;
      members[k + 1] = member;
    }
  }
  return `{${members.join(',')}}`;
}
