/**
 * The secret detector's one pass over a text. Three kinds of evidence, all found in the same loop:
 * - a credential format's literal (secret-formats.ts): a two-character table says whether any
 *   literal starts here, and only then the format's sticky regex runs at that position;
 * - a labelled value (`password = "…"`, `api_key: …`, `SMTP_PASS=…`): at each ':' or '=' the word
 *   before is read backwards and the value after forwards; the value must not be a placeholder or a
 *   reference (`$VAR`, `os.getenv(…)`, `config.password`) and must pass a randomness test;
 * - credentials in a URL (`scheme://user:password@host`, a Sentry DSN's key): at each '://'.
 * No format runs a regex over the whole text, so the cost is one loop plus work at the few
 * positions where a literal, a label or a URL is.
 */
import { KEY_FORMATS, type KeyFormat } from './secret-formats';
import { labelledValue, urlCredential } from './secret-labels';
import { entropy, isPlaceholder, type SecretHit } from './secret-values';

export type { SecretHit } from './secret-values';

interface Entry {
  format: KeyFormat;
  literals: string[];
  re: RegExp;
}

/** [\w-]: a token character (a literal must not follow one; a key must not be followed by one). */
const isTok = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 45;

const FLAG = new Uint8Array(65536);
const ENTRIES = new Map<number, Entry[]>();
for (const f of KEY_FORMATS) {
  const flags = 'y' + (f.ci ? 'i' : '');
  const end = f.open ? '' : '(?![\\w-])';
  const re = new RegExp(f.body + end, flags);
  const byKey = new Map<number, string[]>();
  for (const l of f.literals) {
    const key = (l.charCodeAt(0) << 8) | l.charCodeAt(1);
    byKey.set(key, [...(byKey.get(key) ?? []), l]);
  }
  for (const [key, literals] of byKey) {
    // 1: only formats that start a token (skipped inside a token); 2: an infix format too.
    FLAG[key] = Math.max(FLAG[key], f.anchor === 'infix' ? 2 : 1);
    ENTRIES.set(key, [...(ENTRIES.get(key) ?? []), { format: f, literals, re }]);
  }
}

function bodyOf(m: RegExpExecArray): string {
  for (let g = 1; g < m.length; g++) if (m[g] !== undefined) return m[g];
  return '';
}

function valid(f: KeyFormat, m: RegExpExecArray, text: string): boolean {
  const body = bodyOf(m);
  if (body && isPlaceholder(body)) return false;
  if (f.minEntropy && entropy(body || m[0]) < f.minEntropy) return false;
  return !f.check || f.check(m, text);
}

function hitOf(f: KeyFormat, m: RegExpExecArray, text: string): SecretHit {
  const start = m.index;
  let end = start + m[0].length;
  if (f.id === 'sec.private_key' || f.id === 'sec.putty_key') end = pemEnd(text, end);
  if (f.valueOnly) {
    const body = bodyOf(m);
    const at = start + m[0].lastIndexOf(body);
    return { start: at, end: at + body.length, id: f.id };
  }
  return { start, end, id: f.id };
}

/** A PEM block: the key material runs to its END line (or, cut short, to the end of the base64 run). */
const PEM_END = /-----END[ A-Z]{0,20} PRIVATE KEY(?: BLOCK)?-----|Private-MAC: [0-9a-f]+|(?=[^A-Za-z0-9+/=\s:-])/g;
function pemEnd(text: string, from: number): number {
  PEM_END.lastIndex = from;
  const e = PEM_END.exec(text);
  return e ? e.index + e[0].length : text.length;
}

function tryFormats(text: string, i: number, prevTok: boolean, out: SecretHit[]): boolean {
  const entries = ENTRIES.get((text.charCodeAt(i) << 8) | text.charCodeAt(i + 1));
  if (!entries) return false;
  let found = false;
  for (const { format: f, literals, re } of entries) {
    let lit = false;
    for (const l of literals) if (text.startsWith(l, i)) lit = true;
    if (!lit) continue;
    let start = i;
    if (f.anchor === 'infix') {
      const min = Math.max(0, i - 80);
      while (start > min && f.back!(text.charCodeAt(start - 1))) start--;
      if (start > 0 && isTok(text.charCodeAt(start - 1))) continue;
    } else if (prevTok) continue;
    re.lastIndex = start;
    const m = re.exec(text);
    if (!m || !valid(f, m, text)) continue;
    out.push(hitOf(f, m, text));
    found = true;
  }
  return found;
}

/**
 * Per character code below 256, what can start at it: 1, a format's literal (FLAG says which
 * second characters); 2, a label's separator (':' or '='). One table read per character decides
 * whether anything else is read. joint-scan.ts reads it too.
 */
export const SECRET_KIND = new Uint8Array(256);
for (let key = 0; key < 65536; key++) if (FLAG[key] !== 0) SECRET_KIND[key >> 8] |= 1;
SECRET_KIND[58] |= 2;
SECRET_KIND[61] |= 2;

/**
 * The secrets at position i (whose character is below 256 and has bit 1 or 2 in SECRET_KIND),
 * pushed on out; true when `first` and one was found (the scan stops there).
 */
export function secretsAt(text: string, i: number, out: SecretHit[], first: boolean): boolean {
  const c = text.charCodeAt(i);
  const kind = SECRET_KIND[c];
  // After a token character a start-anchored literal is inside a token (charCodeAt(-1) is NaN: not one).
  const prevTok = isTok(text.charCodeAt(i - 1));
  const c1 = text.charCodeAt(i + 1);
  if ((kind & 1) !== 0 && c1 < 256) {
    const flag = FLAG[(c << 8) | c1];
    if (flag !== 0 && (flag === 2 || !prevTok) && tryFormats(text, i, prevTok, out) && first) return true;
  }
  if ((kind & 2) !== 0) {
    const h = c === 58 && c1 === 47 && text.charCodeAt(i + 2) === 47 ? urlCredential(text, i) : labelledValue(text, i);
    if (h) {
      out.push(h);
      if (first) return true;
    }
  }
  return false;
}

/**
 * Whether secretsAt can find anything at i (c its character, whose SECRET_KIND is not 0): a
 * separator, or a literal's first two characters. Callers test it inline before the call.
 */
export const secretCandidate = (text: string, i: number, c: number): boolean => {
  if ((SECRET_KIND[c] & 2) !== 0) return true;
  const c1 = text.charCodeAt(i + 1);
  return c1 < 256 && FLAG[(c << 8) | c1] !== 0;
};

/** Every secret in text (first: stop at the first one). */
export function scanSecrets(text: string, first = false): SecretHit[] {
  const out: SecretHit[] = [];
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 256 && SECRET_KIND[c] !== 0 && secretCandidate(text, i, c) && secretsAt(text, i, out, first)) return out;
  }
  return out;
}
