/**
 * Secrets recognised by their surroundings rather than their format: a value after a credential
 * label (`password = "…"`, `"client_secret": "…"`, `SMTP_PASS=…`, `api_key: …`) and the password
 * of a URL (`scheme://user:password@host`, and a Sentry DSN's key). Called by secret-scan.ts at a
 * ':' or '=' (labels) or a '://' (URLs): each call reads at most a few hundred characters around
 * that position.
 */
import { entropy, isPlaceholder, type SecretHit } from './secret-values';

type LabelClass = 'password' | 'key' | 'bare';

const isLabelChar = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 45 || c === 46;
const isUpper = (c: number) => c >= 65 && c <= 90;
const isLower = (c: number) => c >= 97 && c <= 122;

/** The keyword ends the label at a word boundary: start, `_`/`-`/`.`, or a camelCase hump (`smtpPass`). */
function boundaryBefore(label: string, at: number): boolean {
  if (at === 0) return true;
  const p = label.charCodeAt(at - 1);
  if (p === 95 || p === 45 || p === 46) return true;
  return isUpper(label.charCodeAt(at)) && isLower(p);
}

const LONG_PASSWORD = ['password', 'passwd', 'passphrase'];
const SHORT_PASSWORD = ['pass', 'pwd', 'pw'];
const LONG_KEY = ['secret', 'token', 'apikey', 'credentials', 'credential', 'privatekey', 'presharedkey', 'secretkey', 'accesskey', 'authkey', 'masterkey', 'signingkey', 'encryptionkey', 'sharedaccesskey', 'subscriptionkey', 'licensekey'];
const NOT_SECRET_KEY = ['publickey', 'public_key', 'pub_key', 'public-key', 'primary_key', 'foreign_key', 'sort_key', 'partition_key', 'cache_key', 'idempotency_key', 'keyboard'];

/** The kind of credential a label names, or null. */
export function labelClass(label: string): LabelClass | null {
  const l = label.toLowerCase();
  for (const w of LONG_PASSWORD) if (l.endsWith(w)) return 'password';
  for (const w of SHORT_PASSWORD) if (l.endsWith(w) && boundaryBefore(label, l.length - w.length)) return 'password';
  for (const w of NOT_SECRET_KEY) if (l.endsWith(w)) return null;
  for (const w of LONG_KEY) if (l.endsWith(w)) return 'key';
  if (l === 'key') return 'bare';
  if (l.endsWith('sonar.login')) return 'key';
  if ((l.endsWith('key') || l.endsWith('auth')) && boundaryBefore(label, l.length - (l.endsWith('key') ? 3 : 4))) return 'key';
  return null;
}

// Not '&': passwords hold it (a query string's next parameter is masked with the value rather than leave part of it visible).
const STOP_UNQUOTED = new Set([32, 9, 10, 13, 44, 59, 34, 39, 96, 40, 41, 93, 125, 60, 62, 124]);
const DOTTED_IDENT = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$/;
const WORD_ONLY = /^[A-Za-z_-]+$/;
/** Words that mark a labelled value as a stand-in or a reference, not a credential (`<insert key>`, a to-do marker, `process.env.KEY`); the word list is what the detector matches, case-insensitively. */
const PLACEHOLDER_WORDS = /example|password|passwd|sample|placeholder|insert|replace|todo|process\.env|getenv|environ/i;
/** A value that stands in for a credential rather than being one: a placeholder word or shape. */
const isStandIn = (v: string): boolean => PLACEHOLDER_WORDS.test(v) || isPlaceholder(v);
const HAS_LETTER = /[A-Za-z]/;
const HAS_DIGIT = /\d/;
const HAS_DIGIT_OR_SYMBOL = /[^A-Za-z\s]/;
const KEY_SECOND_CLASS = /[0-9!#%&*+/=?@^_.~-]/;

function passesClass(cls: LabelClass, v: string, quoted: boolean): boolean {
  if (!HAS_LETTER.test(v)) return false;
  if (cls === 'password') return v.length >= 6 && v.length <= 128 && HAS_DIGIT_OR_SYMBOL.test(v) && !/\s/.test(v) && entropy(v) >= 2.5;
  // Unquoted, a symbol alone is not enough: `Button-Key:first-child` is CSS.
  if (cls === 'key') return v.length >= 12 && (quoted ? KEY_SECOND_CLASS : HAS_DIGIT).test(v) && entropy(v) >= 3.2;
  return v.length >= 20 && HAS_DIGIT.test(v) && entropy(v) >= 3.8;
}

/** A password-like value (given after a password flag or argument): not a reference, placeholder or plain word. */
export function plausiblePassword(v: string): boolean {
  const v0 = v.charCodeAt(0);
  if (v0 === 36 || v0 === 37 || v0 === 123 || v0 === 60) return false;
  return !isStandIn(v) && passesClass('password', v, true);
}

/** A token-like value (given after a token flag): not a reference or placeholder, random enough. */
export function plausibleKey(v: string): boolean {
  const v0 = v.charCodeAt(0);
  if (v0 === 36 || v0 === 37 || v0 === 123 || v0 === 60) return false;
  return !isStandIn(v) && passesClass('key', v, false);
}

/** A labelled secret value whose separator (':' or '=') is at i, or null. */
export function labelledValue(text: string, i: number): SecretHit | null {
  const c = text.charCodeAt(i);
  const prev = text.charCodeAt(i - 1);
  // The second character of ':=', '==', '!=', '<=', '>=' is not a separator of its own.
  if (c === 61 && (prev === 58 || prev === 61 || prev === 33 || prev === 60 || prev === 62)) return null;
  if (c === 58 && (prev === 58 || text.charCodeAt(i + 1) === 58)) return null;
  // The label: back over spaces and one closing quote, then label characters.
  let j = i - 1;
  while (j >= 0 && i - j <= 24 && text.charCodeAt(j) === 32) j--;
  const q = text.charCodeAt(j);
  if (q === 34 || q === 39 || q === 96) j--;
  const labelEnd = j + 1;
  while (j >= 0 && labelEnd - j <= 48 && isLabelChar(text.charCodeAt(j))) j--;
  if (labelEnd - j - 1 < 2) return null;
  const cls = labelClass(text.slice(j + 1, labelEnd));
  if (!cls) return null;
  // The value: after ':=', '=>', '==', spaces, an optional opening quote.
  const n = text.length;
  let k = i + 1;
  while (k < n && k - i <= 2 && (text.charCodeAt(k) === 61 || text.charCodeAt(k) === 62)) k++;
  const sp = k;
  // Aligned assignments (`fbApiKey:            "…"`) pad with many spaces.
  while (k < n && k - sp < 24 && (text.charCodeAt(k) === 32 || text.charCodeAt(k) === 9)) k++;
  const open = text.charCodeAt(k);
  const quoted = open === 34 || open === 39 || open === 96;
  let start = k;
  let end: number;
  if (quoted) {
    start = k + 1;
    end = start;
    while (end < n && end - start <= 128 && text.charCodeAt(end) !== open && text.charCodeAt(end) !== 10) end++;
    if (text.charCodeAt(end) !== open) return null;
  } else {
    end = start;
    while (end < n && end - start <= 128 && !STOP_UNQUOTED.has(text.charCodeAt(end))) end++;
    if (text.charCodeAt(end) === 40) return null; // a call: `password = getPassword()`
  }
  const v = text.slice(start, end);
  if (v.length < 6 || v.length > 128) return null;
  const v0 = v.charCodeAt(0);
  // References, not values: $VAR, %VAR%, {{var}}, [list], <tag>, @attr, #comment.
  if (v0 === 36 || v0 === 37 || v0 === 123 || v0 === 91 || v0 === 60 || v0 === 64 || v0 === 35) return null;
  if (!quoted && (DOTTED_IDENT.test(v) || WORD_ONLY.test(v))) return null;
  if (isStandIn(v)) return null;
  if (!passesClass(cls, v, quoted)) return null;
  return { start, end, id: 'sec.labeled' };
}

const isSchemeChar = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 43 || c === 46 || c === 45;
const STOP_AUTHORITY = new Set([47, 32, 9, 10, 13, 34, 39, 96, 63, 35, 60, 62, 41, 93, 125]);
const HEX32 = /^[a-f0-9]{32}$/;

/** The password of `scheme://user:password@host` (or a Sentry DSN's key) whose '://' is at i, or null. */
export function urlCredential(text: string, i: number): SecretHit | null {
  let s = i;
  while (s > 0 && i - s < 20 && isSchemeChar(text.charCodeAt(s - 1))) s--;
  if (i - s < 2) return null;
  const a = i + 3;
  let e = a;
  while (e < text.length && e - a < 256 && !STOP_AUTHORITY.has(text.charCodeAt(e))) e++;
  const auth = text.slice(a, e);
  const at = auth.lastIndexOf('@');
  if (at <= 0 || at === auth.length - 1) return null;
  const userinfo = auth.slice(0, at);
  const host = auth.slice(at + 1);
  const colon = userinfo.indexOf(':');
  if (colon < 0) {
    if (HEX32.test(userinfo) && /sentry|ingest/.test(host)) return { start: a, end: a + at, id: 'sec.sentry_dsn' };
    return null;
  }
  const user = userinfo.slice(0, colon);
  const pw = userinfo.slice(colon + 1);
  if (pw.length < 6 || pw === user || !/[A-Za-z0-9]/.test(host)) return null;
  const p0 = pw.charCodeAt(0);
  if (p0 === 36 || p0 === 37 || p0 === 123 || p0 === 60) return null;
  if (isStandIn(pw) || entropy(pw) < 2.5) return null;
  return { start: a + colon + 1, end: a + at, id: 'sec.connection_url' };
}
