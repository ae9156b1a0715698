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

/** The old whole-string base view, applied to the segments of a text that hold non-ASCII characters. */
function baseSegment(raw: string): string {
  let t = raw.normalize('NFKC').replace(INVISIBLE, '');
  if (/[\u0080-\uFFFF]/.test(t)) t = t.normalize('NFD').replace(COMBINING, '').normalize('NFC').replace(CONFUSABLE_RE, (c) => CONFUSABLES[c]);
  return t;
}

const NON_ASCII = /[^\x00-\x7F]/;
const NON_ASCII_RUNS = /[^\x00-\x7F]+/g;
/** Non-ASCII runs closer than this are normalised together (fewer calls, same result). */
const SEGMENT_GAP = 64;

/**
 * The base view: NFKC (full-width and compatibility forms), invisible characters removed, diacritics
 * stripped, confusable letters mapped to Latin. Used by every detector.
 *
 * Every ASCII character is a normalisation boundary (NFC/NFKC quick-check Yes, combining class 0,
 * never the second half of a composition) and is left unchanged by every step, so the text is split
 * before ASCII characters and only the segments holding non-ASCII characters (each with the ASCII
 * character before it, which a combining mark may attach to) are normalised: pure-ASCII text is
 * returned as is, and the result equals normalising the whole text.
 */
export function baseView(raw: string): string {
  if (!NON_ASCII.test(raw)) return raw;
  let out = '';
  let done = 0;
  let segStart = -1;
  let segEnd = -1;
  NON_ASCII_RUNS.lastIndex = 0;
  for (let m = NON_ASCII_RUNS.exec(raw); m; m = NON_ASCII_RUNS.exec(raw)) {
    const s = m.index > 0 ? m.index - 1 : 0;
    const e = m.index + m[0].length;
    if (segStart >= 0 && s - segEnd <= SEGMENT_GAP) {
      segEnd = e;
      continue;
    }
    if (segStart >= 0) {
      out += raw.slice(done, segStart) + baseSegment(raw.slice(segStart, segEnd));
      done = segEnd;
    }
    segStart = s;
    segEnd = e;
  }
  if (segStart >= 0) {
    out += raw.slice(done, segStart) + baseSegment(raw.slice(segStart, segEnd));
    done = segEnd;
  }
  return out + raw.slice(done);
}

/** Leetspeak characters (char code → letter); '2' and '6' are leet characters left unchanged. */
const LEET_CODE = new Int16Array(128).fill(-1);
for (const [c, l] of Object.entries({ '0': 'o', '1': 'i', '2': '2', '3': 'e', '4': 'a', '5': 's', '6': '6', '7': 't', '8': 'b', '9': 'g', '@': 'a', $: 's', '|': 'i' })) LEET_CODE[c.charCodeAt(0)] = l.charCodeAt(0);
/** Canonical spellings of words whose letters are often scrambled (typoglycemia): key = first + last + sorted middle. */
const TYPO_WORDS = ['ignore', 'disregard', 'previous', 'instructions', 'instruction', 'system', 'prompt', 'forget', 'above', 'reveal', 'bypass', 'restrictions', 'guidelines', 'password', 'secret', 'override', 'rules'];
const typoKey = (w: string) => w[0] + w[w.length - 1] + [...w.slice(1, -1)].sort().join('');
const TYPO = new Map(TYPO_WORDS.map((w) => [typoKey(w), w]));
/** Cheap pre-check (first letter, last letter, length) before sorting a word's letters. */
const shapeKey = (first: number, last: number, len: number) => (first << 16) | (last << 8) | len;
const TYPO_SHAPE = new Set(TYPO_WORDS.map((w) => shapeKey(w.charCodeAt(0), w.charCodeAt(w.length - 1), w.length)));

const isLower = (c: number) => c >= 97 && c <= 122;
const isAlnum = (c: number) => (c >= 97 && c <= 122) || (c >= 48 && c <= 57);
/** A regex word character (\w without the u flag); upper-case letters cannot occur after lower-casing. */
const isWordChar = (c: number) => (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95 || (c >= 65 && c <= 90);
/** Separators between letters spelled out one by one: space . - _ * */
const isSpellSep = (c: number) => c === 32 || c === 46 || c === 45 || c === 95 || c === 42;
/** Stands for every non-ASCII character in the byte copy: not alphanumeric, not a word character, not a separator. */
const OTHER = 0x80;
const SPACE = 32;

/** Scratch buffers reused between calls (inspection is synchronous). */
let scratchIn = Buffer.alloc(0);
let scratchOut = Buffer.alloc(0);

/**
 * The words view for phrase signals: lower case, leetspeak undone inside tokens that mix letters and
 * digits, letters spelled out one by one joined ("i g n o r e", "I-g-n-o-r-e"), scrambled key words
 * restored, punctuation and underscores turned into single spaces.
 *
 * Two linear passes over a byte copy (every non-ASCII character becomes one OTHER byte, which none of
 * the steps treats as a letter, digit, word character or separator), equivalent to these steps on the
 * lower-cased text:
 *   1. leetspeak: in each run of [a-z0-9@$|] holding a letter and one of [0-9@$|], those characters
 *      mapped to letters ('2' and '6' kept);
 *   2. spelled out: /\b(?:[a-z0-9][ .\-_*](?=[a-z0-9]\b)){2,}[a-z0-9]\b/g → separators removed;
 *   3. /[^a-z0-9]+/g → ' ', trimmed, wrapped in single spaces;
 *   4. scrambled key words: whole words of 5–12 letters looked up by their sorted middle letters.
 */
export function wordsView(base: string): string {
  const t = base.toLowerCase();
  const n = t.length;
  if (scratchIn.length < n) scratchIn = Buffer.alloc(Math.max(n, 2 * scratchIn.length));
  if (scratchOut.length < n + 2) scratchOut = Buffer.alloc(Math.max(n + 2, 2 * scratchOut.length));
  const u = scratchIn;
  const o = scratchOut;
  // Pass 1: byte copy with leetspeak undone.
  for (let i = 0; i < n; ) {
    let c = t.charCodeAt(i);
    if (c >= 128) {
      u[i++] = OTHER;
      continue;
    }
    if (!(isLower(c) || LEET_CODE[c] >= 0)) {
      u[i++] = c;
      continue;
    }
    const s = i;
    let letter = false;
    let leet = false;
    for (; i < n; i++) {
      c = t.charCodeAt(i);
      if (isLower(c)) letter = true;
      else if (c < 128 && LEET_CODE[c] >= 0) leet = true;
      else break;
      u[i] = c;
    }
    if (letter && leet) for (let j = s; j < i; j++) if (!isLower(u[j])) u[j] = LEET_CODE[u[j]];
  }
  // Pass 2: words (spelled-out letters joined, scrambled key words restored) separated by one space.
  let len = 0;
  o[len++] = SPACE;
  let i = 0;
  while (i < n) {
    if (!isAlnum(u[i])) {
      i++;
      continue;
    }
    if (len > 1) o[len++] = SPACE;
    const start = len;
    const s = i;
    let letters = true;
    for (; i < n; i++) {
      const c = u[i];
      if (c >= 97 && c <= 122) o[len++] = c;
      else if (c >= 48 && c <= 57) {
        letters = false;
        o[len++] = c;
      } else break;
    }
    // Spelled out: a one-character word at a \b, then ≥ 2 × (separator, one-character word followed by a \b).
    if (i - s === 1 && (s === 0 || !isWordChar(u[s - 1]))) {
      let p = s;
      let k = 0;
      while (p + 2 < n && isSpellSep(u[p + 1]) && isAlnum(u[p + 2]) && (p + 3 >= n || !isWordChar(u[p + 3]))) {
        k++;
        p += 2;
      }
      if (k >= 2) {
        for (let j = s + 2; j <= p; j += 2) {
          o[len++] = u[j];
          if (!isLower(u[j])) letters = false;
        }
        i = p + 1;
      }
    }
    // Scrambled key words: whole words of 5–12 letters.
    const wl = len - start;
    if (letters && wl >= 5 && wl <= 12 && TYPO_SHAPE.has(shapeKey(o[start], o[len - 1], wl))) {
      const w = o.toString('latin1', start, len);
      const fixed = TYPO.get(typoKey(w));
      if (fixed !== undefined && fixed !== w) o.write(fixed, start, 'latin1');
    }
  }
  if (len > 1) o[len++] = SPACE;
  else return '  ';
  return o.toString('latin1', 0, len);
}

function printable(s: string): boolean {
  if (s.length < 8) return false;
  let ok = 0;
  let bad = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c >= 32 && c < 127) || c === 10 || c === 13 || c === 9) ok++;
    // Stop once the ratio below can no longer exceed 0.9 (ok ≤ length − bad).
    else if ((s.length - ++bad) / s.length <= 0.9) return false;
  }
  return ok / s.length > 0.9 && /[a-z]{3,}/i.test(s) && /\s/.test(s);
}

const URL_ENC = /%[0-9A-Fa-f]{2}/;
/** Limit on decoded views per text, so a hostile input of many short spans stays cheap. */
const MAX_DECODED = 16;

const isB64 = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47 || c === 95 || c === 45;
const isHex = (c: number) => (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70);

/**
 * Embedded encoded spans decoded to text: base64 (standard and URL-safe), hex, URL (percent)
 * encoding. Only spans that decode to readable text are returned.
 *
 * Spans are found by one scan each, with the same matches as /[A-Za-z0-9+/_-]{16,}={0,2}/g (every
 * maximal run of ≥ 16 base64 characters, with up to two '=' after it) and /(?:[0-9a-fA-F]{2}){8,}/g
 * (every maximal run of ≥ 16 hex digits, cut to an even length).
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
  const n = base.length;
  for (let i = 0; i < n && out.length < MAX_DECODED; ) {
    if (!isB64(base.charCodeAt(i))) {
      i++;
      continue;
    }
    const s = i;
    let upper = false;
    let lower = false;
    for (; i < n; i++) {
      const c = base.charCodeAt(i);
      if (c >= 65 && c <= 90) upper = true;
      else if (c >= 97 && c <= 122) lower = true;
      else if (!isB64(c)) break;
    }
    if (i - s < 16 || !upper || !lower) continue;
    let e = i;
    if (e < n && base.charCodeAt(e) === 61) e += e + 1 < n && base.charCodeAt(e + 1) === 61 ? 2 : 1;
    const d = Buffer.from(base.slice(s, e).replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8');
    if (printable(d)) out.push(d);
  }
  for (let i = 0; i < n && out.length < MAX_DECODED; ) {
    if (!isHex(base.charCodeAt(i))) {
      i++;
      continue;
    }
    const s = i;
    while (i < n && isHex(base.charCodeAt(i))) i++;
    if (i - s < 16) continue;
    const d = Buffer.from(base.slice(s, s + ((i - s) & ~1)), 'hex').toString('utf8');
    if (printable(d)) out.push(d);
  }
  return out;
}
