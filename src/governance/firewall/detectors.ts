/**
 * Prompt-firewall detectors. These rules are internal: no route exposes them, and events and
 * decisions name only the category (`prompt_injection`, `secret`, `pii`).
 */

import { contextSpans } from './pii-context';
import type { Span } from './span';
import { luhn } from './pii-checks';
import { idSpans } from './pii-ids';
import { scanSecrets } from './secret-scan';
import type { JointScan } from './joint-scan';

export type { Span };

export type FirewallCategory = 'prompt_injection' | 'secret' | 'pii';

export interface Detector {
  /** Internal rule id (logs/tests only, never in a response or event). */
  id: string;
  category: FirewallCategory;
  /** Only run when this project toggle is on. */
  toggle?: 'detect_pii_email' | 'detect_pii_phone';
  /** `joint`: the text's joint scan (joint-scan.ts), for a caller running several detectors on it. */
  test(text: string, joint?: JointScan): boolean;
  /**
   * The spans of the raw text a redaction masks (redact.ts), found with the same validation as
   * `test` (checksums, placeholders, entropy, context). `kind` names the placeholder.
   */
  spans(text: string, joint?: JointScan): Span[];
}


/**
 * A detector from one regex whose matches are spans of `kind`. `value` (a regex over the match,
 * default the whole match) is the part a redaction masks: a labelled number keeps its label
 * ("SSN: [REDACTED_SSN_1]").
 */
const re = (id: string, category: FirewallCategory, pattern: RegExp, opts: { kind: string; toggle?: Detector['toggle']; value?: RegExp }): Detector => {
  const { kind, toggle, value } = opts;
  const all = new RegExp(pattern.source, pattern.flags.includes('g') ? pattern.flags : pattern.flags + 'g');
  return {
    id,
    category,
    toggle,
    test: (t) => {
      pattern.lastIndex = 0;
      return pattern.test(t);
    },
    spans: (t) => {
      const out: Span[] = [];
      for (const m of matches(all, t)) {
        if (!m[0]) continue;
        const v = value ? value.exec(m[0]) : null;
        out.push(v ? { start: m.index + v.index, end: m.index + v.index + v[0].length, kind } : { start: m.index, end: m.index + m[0].length, kind });
      }
      return out;
    },
  };
};

// Secrets: one pass over the text (secret-scan.ts) for credential formats, labelled values and URL passwords.
export { entropy, isPlaceholder } from './secret-values';

/**
 * The matches of a global pattern, as `text.matchAll(pattern)` gives them, without its copy of the
 * pattern: matchAll clones the RegExp on every call, and the firewall runs ~50 patterns on every
 * prompt (the clones were ~3 % of the request path's CPU).
 */
function* matches(pattern: RegExp, text: string): Generator<RegExpExecArray> {
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    if (m[0] === '') pattern.lastIndex += 1;
    yield m;
  }
}

/** Whether any match of a global pattern satisfies `valid` (stops at the first that does). */
function someMatch(pattern: RegExp, text: string, valid: (m: RegExpExecArray) => boolean): boolean {
  for (const m of matches(pattern, text)) if (valid(m)) return true;
  return false;
}

const secretDetector: Detector = {
  id: 'sec.formats',
  category: 'secret',
  test: (t, joint) => (joint?.text === t ? joint.any().secrets : scanSecrets(t, true)).length > 0,
  spans: (t, joint) => (joint?.text === t ? joint.all().secrets : scanSecrets(t)).map((h) => ({ start: h.start, end: h.end, kind: 'SECRET' })),
};
const secrets: Detector[] = [secretDetector];


const CARD_CANDIDATE = /\b(?:\d[ -]?){12,18}\d\b/g;
function isCard(candidate: string): boolean {
  const digits = candidate.replace(/[ -]/g, '');
  if (digits.length < 13 || digits.length > 19) return false;
  if (!/^(?:4|5[1-5]|2[2-7]|3[47]|3[0689]|6(?:011|5|4[4-9]|22)|35)/.test(digits)) return false;
  if (/^(\d)\1+$/.test(digits)) return false;
  return luhn(digits);
}
/** The spans (of `kind`) of a global pattern's matches that pass `valid`: the whole match, or its group `group`. */
function validSpans(text: string, find: { pattern: RegExp; kind: string; valid: (m: RegExpExecArray) => boolean; group?: number }): Span[] {
  const { pattern, kind, valid, group = 0 } = find;
  const out: Span[] = [];
  for (const m of matches(pattern, text)) {
    if (!valid(m)) continue;
    const start = group ? m.index + m[0].lastIndexOf(m[group]) : m.index;
    out.push({ start, end: start + m[group].length, kind });
  }
  return out;
}
const cardDetector: Detector = {
  id: 'pii.card',
  category: 'pii',
  test: (text) => someMatch(CARD_CANDIDATE, text, (m) => isCard(m[0])),
  spans: (text) => validSpans(text, { pattern: CARD_CANDIDATE, kind: 'CARD', valid: (m) => isCard(m[0]) }),
};

// IBANs (every registry country) and national ids: one pass over the text (pii-ids.ts).
const idDetector: Detector = {
  id: 'pii.national_id',
  category: 'pii',
  test: (t, joint) => (joint?.text === t ? joint.any().ids : idSpans(t, true)).length > 0,
  spans: (t, joint) => (joint?.text === t ? joint.all().ids : idSpans(t)),
};
// Dates of birth next to a name, postal addresses after a personal cue (pii-context.ts).
const contextDetector: Detector = { id: 'pii.context', category: 'pii', test: (t) => contextSpans(t, true).length > 0, spans: (t) => contextSpans(t) };

// Verhoeff check digit (Aadhaar).
const VD = [[0,1,2,3,4,5,6,7,8,9],[1,2,3,4,0,6,7,8,9,5],[2,3,4,0,1,7,8,9,5,6],[3,4,0,1,2,8,9,5,6,7],[4,0,1,2,3,9,5,6,7,8],[5,9,8,7,6,0,4,3,2,1],[6,5,9,8,7,1,0,4,3,2],[7,6,5,9,8,2,1,0,4,3],[8,7,6,5,9,3,2,1,0,4],[9,8,7,6,5,4,3,2,1,0]]; // prettier-ignore
const VP = [[0,1,2,3,4,5,6,7,8,9],[1,5,7,6,2,8,3,0,9,4],[5,8,0,3,7,9,6,1,4,2],[8,9,1,6,0,4,3,5,2,7],[9,4,5,3,1,2,6,8,7,0],[4,2,8,6,5,7,3,9,0,1],[2,7,9,3,8,0,6,4,1,5],[7,0,4,6,9,1,3,2,5,8]]; // prettier-ignore
export function verhoeffValid(digits: string): boolean {
  let c = 0;
  for (let i = 0; i < digits.length; i++) c = VD[c][VP[i % 8][digits.charCodeAt(digits.length - 1 - i) - 48]];
  return c === 0;
}
// Indian Aadhaar: 12 digits (first 2-9) with a Verhoeff check digit and an Aadhaar/UIDAI label nearby.
const AADHAAR = /\b(?:aadhaa?r|uidai|uid)\b[^0-9\n]{0,30}([2-9]\d{3}[ -]?\d{4}[ -]?\d{4})\b/gi;
const aadhaarDetector: Detector = {
  id: 'pii.in_aadhaar',
  category: 'pii',
  test: (text) => someMatch(AADHAAR, text, (m) => verhoeffValid(m[1].replace(/[ -]/g, ''))),
  spans: (text) => validSpans(text, { pattern: AADHAAR, kind: 'NATIONAL_ID', valid: (m) => verhoeffValid(m[1].replace(/[ -]/g, '')), group: 1 }),
};

// E-mail addresses (toggle detect_pii_email): a personal address is flagged; not the sender/recipient
// lines of an e-mail being processed (From:/To:/Cc:/Sender: headers, "message from x@y") or role
// accounts (noreply@, support@, info@...).
// Matched from each '@' (not by scanning every position, which costs up to 64 steps per character
// of a long run without '@'); same matches as the regex
//   /[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}\b/g
// The local part cannot hold '@', so a match belongs to the first '@' after its start: its start is
// the leftmost of the (at most 64) local-part characters before that '@', from where the search
// resumes, and it exists iff the domain part matches right after the '@'.
const EMAIL_DOMAIN = /[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}\b/y;
const isEmailLocal = (c: number) =>
  (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 46 || c === 95 || c === 37 || c === 43 || c === 45;
function* emailMatches(text: string): Generator<{ index: number; at: number; end: number }> {
  let from = 0;
  for (let at = text.indexOf('@'); at >= 0; at = text.indexOf('@', at + 1)) {
    let start = at;
    const min = Math.max(from, at - 64);
    while (start > min && isEmailLocal(text.charCodeAt(start - 1))) start--;
    if (start === at) continue;
    EMAIL_DOMAIN.lastIndex = at + 1;
    if (!EMAIL_DOMAIN.test(text)) continue;
    from = EMAIL_DOMAIN.lastIndex;
    yield { index: start, at, end: from };
    if (from > at + 1) at = from - 1;
  }
}
const ROLE_LOCAL = /^(?:no-?reply|do-?not-?reply|support|help|info|contact|hello|team|sales|admin|billing|accounts?|alerts?|notifications?|newsletter|news|marketing|office|hr|jobs|careers|press|security|privacy|abuse|postmaster|webmaster|service|feedback|orders?|invoices?|updates?)$/i;
const HEADER_LINE = /^[ \t>]*(?:from|to|cc|bcc|sender|reply-to|return-path|delivered-to)[ \t]*:/i;
const SENDER_CONTEXT = /\b(?:from|sender|sent by)\s*:?\s*(?:"[^"\n]{0,60}"\s*|[^<\n@]{0,40}<)?$/i;
function* personalEmails(text: string): Generator<Span> {
  for (const m of emailMatches(text)) {
    if (ROLE_LOCAL.test(text.slice(m.index, m.at))) continue;
    const at = m.index;
    const lineStart = text.lastIndexOf('\n', at - 1) + 1;
    if (HEADER_LINE.test(text.slice(lineStart, at))) continue;
    if (SENDER_CONTEXT.test(text.slice(Math.max(lineStart, at - 80), at))) continue;
    yield { start: m.index, end: m.end, kind: 'EMAIL' };
  }
}
const emailDetector: Detector = {
  id: 'pii.email',
  category: 'pii',
  toggle: 'detect_pii_email',
  test: (text) => !personalEmails(text).next().done,
  spans: (text) => [...personalEmails(text)],
};

const pii: Detector[] = [
  cardDetector,
  // US SSN (dashed; area 000/666/9xx, group 00 and serial 0000 are never issued).
  re('pii.us_ssn', 'pii', /\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b/, { kind: 'SSN' }),
  re('pii.us_ssn_labeled', 'pii', /\b(?:SSN|social\s+security(?:\s+number)?)\b[^0-9\n]{0,20}(?!000|666|9\d\d)\d{3}\s?(?!00)\d{2}\s?(?!0000)\d{4}\b/i, { kind: 'SSN', value: /\d[\d\s]*$/ }),
  // UK National Insurance number.
  re('pii.uk_nino', 'pii', /\b(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b/, { kind: 'NATIONAL_ID' }),
  // Canadian SIN with a label (digits alone collide with phone numbers).
  re('pii.ca_sin', 'pii', /\b(?:SIN|social\s+insurance(?:\s+number)?)\b[^0-9\n]{0,20}\d{3}[- ]?\d{3}[- ]?\d{3}\b/i, { kind: 'NATIONAL_ID', value: /\d[\d -]*$/ }),
  // Indian Aadhaar with a label.
  aadhaarDetector,
  // Passport numbers only with a label.
  re('pii.passport', 'pii', /\bpassport\s+(?:no\.?|number|#)\s*[:#]?\s*[A-Z0-9]{6,9}\b/i, { kind: 'PASSPORT', value: /[A-Z0-9]{6,9}$/i }),
  idDetector,
  contextDetector,
  emailDetector,
  re('pii.phone', 'pii', /(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)\s?|\b\d{3}[ .-])\d{3}[ .-]\d{4}\b|\+\d{10,15}\b|(?<![\w+])\+\d{1,3}(?:[ .-]?\d{1,4}){3,5}(?!\d)/, { kind: 'PHONE', toggle: 'detect_pii_phone' }),
];

export const DETECTORS: readonly Detector[] = [...secrets, ...pii];
