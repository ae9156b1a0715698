/**
 * Text views the firewall detectors run on. Every step is a single linear pass (or a regex without
 * nested unbounded quantifiers), so inspection cost stays proportional to the input length.
 */

/** Zero-width, bidi-control, soft-hyphen and variation-selector characters: dropped before matching. */
// eslint-disable-next-line no-misleading-character-class -- lone invisible code points are exactly what is matched here
const INVISIBLE = /[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180E\u200B-\u200F\u202A-\u202E\u2060-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0]/g;
/** Combining marks (after NFD), used to hide letters under diacritics. */
// eslint-disable-next-line no-misleading-character-class -- lone combining marks are exactly what is matched here
const COMBINING = /[\u0300-\u036F\u1AB0-\u1AFF\u1DC0-\u1DFF\u20D0-\u20FF\uFE20-\uFE2F]/g;

/** Confusable letters (Cyrillic, Greek, small capitals, IPA) mapped to the Latin letter they imitate. */
const CONFUSABLES: Record<string, string> = {
  а: 'a', в: 'b', е: 'e', ё: 'e', к: 'k', м: 'm', н: 'h', о: 'o', р: 'p', с: 'c', т: 't', у: 'y', х: 'x', ѕ: 's', і: 'i', ї: 'i', ј: 'j', ԁ: 'd', һ: 'h', ӏ: 'l', ԛ: 'q', ԝ: 'w', ɡ: 'g',
  А: 'A', В: 'B', Е: 'E', К: 'K', М: 'M', Н: 'H', О: 'O', Р: 'P', С: 'C', Т: 'T', Х: 'X', У: 'Y', І: 'I', Ј: 'J', Ѕ: 'S',
  α: 'a', β: 'b', ε: 'e', η: 'n', ι: 'i', κ: 'k', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x', ω: 'w',
  Α: 'A', Β: 'B', Ε: 'E', Η: 'H', Ι: 'I', Κ: 'K', Μ: 'M', Ν: 'N', Ο: 'O', Ρ: 'P', Τ: 'T', Υ: 'Y', Χ: 'X', Ζ: 'Z',
  ᴀ: 'a', ʙ: 'b', ᴄ: 'c', ᴅ: 'd', ᴇ: 'e', ꜰ: 'f', ɢ: 'g', ʜ: 'h', ɪ: 'i', ᴊ: 'j', ᴋ: 'k', ʟ: 'l', ᴍ: 'm', ɴ: 'n', ᴏ: 'o', ᴘ: 'p', ǫ: 'q', ʀ: 'r', ꜱ: 's', ᴛ: 't', ᴜ: 'u', ᴠ: 'v', ᴡ: 'w', ʏ: 'y', ᴢ: 'z',
};
const CONFUSABLE_RE = new RegExp(`[${Object.keys(CONFUSABLES).join('')}]`, 'g');

/**
 * The base view: NFKC (full-width and compatibility forms), invisible characters removed, diacritics
 * stripped, confusable letters mapped to Latin. Used by every detector.
 */
export function baseView(raw: string): string {
  let t = raw.normalize('NFKC').replace(INVISIBLE, '');
  if (/[\u0080-\uFFFF]/.test(t)) t = t.normalize('NFD').replace(COMBINING, '').normalize('NFC').replace(CONFUSABLE_RE, (c) => CONFUSABLES[c]);
  return t;
}

const LEET_CHAR = /[0-9@$|]/;
const LEET_ALL = /[0-9@$|]/g;
const LETTER = /[a-z]/;
const LEET: Record<string, string> = { '0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '8': 'b', '9': 'g', '@': 'a', $: 's', '|': 'i' };
/** Canonical spellings of words whose letters are often scrambled (typoglycemia): key = first + last + sorted middle. */
const TYPO_WORDS = ['ignore', 'disregard', 'previous', 'instructions', 'instruction', 'system', 'prompt', 'forget', 'above', 'reveal', 'bypass', 'restrictions', 'guidelines', 'password', 'secret', 'override', 'rules'];
const typoKey = (w: string) => w[0] + w[w.length - 1] + [...w.slice(1, -1)].sort().join('');
const TYPO = new Map(TYPO_WORDS.map((w) => [typoKey(w), w]));
/** Cheap pre-check (first letter, last letter, length) before sorting a word's letters. */
const TYPO_SHAPE = new Set(TYPO_WORDS.map((w) => `${w[0]}${w[w.length - 1]}${w.length}`));

/**
 * The words view for phrase signals: lower case, leetspeak undone inside tokens that mix letters and
 * digits, letters spelled out one by one joined ("i g n o r e", "I-g-n-o-r-e"), scrambled key words
 * restored, punctuation and underscores turned into single spaces.
 */
export function wordsView(base: string): string {
  let t = base.toLowerCase();
  // Leetspeak: only in tokens that contain a letter and a leet character.
  if (LEET_CHAR.test(t)) {
    const parts = t.split(/([^a-z0-9@$|]+)/);
    for (let i = 0; i < parts.length; i += 2) {
      const tok = parts[i];
      if (tok && LEET_CHAR.test(tok) && LETTER.test(tok)) parts[i] = tok.replace(LEET_ALL, (c) => LEET[c] ?? c);
    }
    t = parts.join('');
  }
  // Letters spelled out one by one: "i g n o r e" / "i-g-n-o-r-e" / "i.g.n.o.r.e".
  t = t.replace(/\b(?:[a-z0-9][ .\-_*](?=[a-z0-9]\b)){2,}[a-z0-9]\b/g, (m) => m.replace(/[ .\-_*]/g, ''));
  t = t.replace(/[^a-z0-9]+/g, ' ');
  // Scrambled key words.
  t = t.replace(/\b[a-z]{5,12}\b/g, (w) => (TYPO_SHAPE.has(`${w[0]}${w[w.length - 1]}${w.length}`) ? TYPO.get(typoKey(w)) ?? w : w));
  return ` ${t.trim()} `;
}

function printable(s: string): boolean {
  if (s.length < 8) return false;
  let ok = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c >= 32 && c < 127) || c === 10 || c === 13 || c === 9) ok++;
  }
  return ok / s.length > 0.9 && /[a-z]{3,}/i.test(s) && /\s/.test(s);
}

const B64_SPAN = /[A-Za-z0-9+/_-]{16,}={0,2}/g;
const HEX_SPAN = /(?:[0-9a-fA-F]{2}){8,}/g;
const URL_ENC = /%[0-9A-Fa-f]{2}/;
/** Limit on decoded views per text, so a hostile input of many short spans stays cheap. */
const MAX_DECODED = 16;

/**
 * Embedded encoded spans decoded to text: base64 (standard and URL-safe), hex, URL (percent)
 * encoding. Only spans that decode to readable text are returned.
 */
export function decodedViews(base: string): string[] {
  const out: string[] = [];
  if (URL_ENC.test(base)) {
    const d = base.replace(/(?:%[0-9A-Fa-f]{2})+/g, (m) => {
      try {
        return decodeURIComponent(m);
      } catch {
        return m;
      }
    });
    if (d !== base) out.push(d.replace(/\+/g, ' '));
  }
  for (const m of base.matchAll(B64_SPAN)) {
    if (out.length >= MAX_DECODED) break;
    const span = m[0];
    if (!/[A-Z]/.test(span) || !/[a-z]/.test(span)) continue;
    const d = Buffer.from(span.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8');
    if (printable(d)) out.push(d);
  }
  for (const m of base.matchAll(HEX_SPAN)) {
    if (out.length >= MAX_DECODED) break;
    const d = Buffer.from(m[0], 'hex').toString('utf8');
    if (printable(d)) out.push(d);
  }
  return out;
}
