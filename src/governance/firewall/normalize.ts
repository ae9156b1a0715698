/**
 * Text views the firewall detectors run on. Every step is a single linear pass (or a regex without
 * nested unbounded quantifiers), so inspection cost stays proportional to the input length.
 *
 * Size: mostly mapping tables (confusables, compatibility forms, leetspeak) beside the passes that use them.
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

const NON_ASCII = /[\u0080-\uFFFF]/;
const NON_ASCII_RUNS = /[\u0080-\uFFFF]+/g;
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
  // Pieces of the result; segments that normalise to themselves (curly quotes, dashes, ...) are
  // not copied, and a text where every segment does is returned as is (no new string to flatten).
  const parts: string[] = [];
  let done = 0;
  let segStart = -1;
  let segEnd = -1;
  const flush = () => {
    const seg = raw.slice(segStart, segEnd);
    const norm = baseSegment(seg);
    if (norm === seg) return;
    parts.push(raw.slice(done, segStart), norm);
    done = segEnd;
  };
  NON_ASCII_RUNS.lastIndex = 0;
  for (let m = NON_ASCII_RUNS.exec(raw); m; m = NON_ASCII_RUNS.exec(raw)) {
    const s = m.index > 0 ? m.index - 1 : 0;
    const e = m.index + m[0].length;
    if (segStart >= 0 && s - segEnd <= SEGMENT_GAP) {
      segEnd = e;
      continue;
    }
    if (segStart >= 0) flush();
    segStart = s;
    segEnd = e;
  }
  if (segStart >= 0) flush();
  if (done === 0) return raw;
  parts.push(raw.slice(done));
  return parts.join('');
}

/** Leetspeak characters (char code → letter); '2' and '6' are leet characters left unchanged. */
const LEET_CODE = new Int16Array(128).fill(-1);
for (const [c, l] of Object.entries({ '0': 'o', '1': 'i', '2': '2', '3': 'e', '4': 'a', '5': 's', '6': '6', '7': 't', '8': 'b', '9': 'g', '@': 'a', $: 's', '|': 'i' })) LEET_CODE[c.charCodeAt(0)] = l.charCodeAt(0);
/** Canonical spellings of words whose letters are often scrambled (typoglycemia): key = first + last + sorted middle. */
const TYPO_WORDS = ['ignore', 'disregard', 'previous', 'instructions', 'instruction', 'system', 'prompt', 'forget', 'above', 'reveal', 'bypass', 'restrictions', 'guidelines', 'password', 'secret', 'override', 'rules'];
const typoKey = (w: string) => w[0] + w[w.length - 1] + [...w.slice(1, -1)].sort().join('');
const TYPO = new Map(TYPO_WORDS.map((w) => [typoKey(w), w]));
/** Shape (first letter, last letter, length) → the canonical words of that shape, with their middle-letter counts. */
const shapeKey = (first: number, last: number, len: number) => (first << 16) | (last << 8) | len;
const TYPO_BY_SHAPE = new Map<number, { word: Uint8Array; counts: Int32Array }[]>();
for (const w of TYPO.values()) {
  const k = shapeKey(w.charCodeAt(0), w.charCodeAt(w.length - 1), w.length);
  const counts = new Int32Array(26);
  for (let i = 1; i < w.length - 1; i++) counts[w.charCodeAt(i) - 97]++;
  TYPO_BY_SHAPE.set(k, [...(TYPO_BY_SHAPE.get(k) ?? []), { word: Buffer.from(w, 'latin1'), counts }]);
}
const typoCounts = new Int32Array(26);
/** The canonical word whose middle letters are those of o[start+1, end-1) (same shape assumed), if any. */
function typoMatch(o: Uint8Array, start: number, end: number, cands: { word: Uint8Array; counts: Int32Array }[]): Uint8Array | null {
  typoCounts.fill(0);
  for (let j = start + 1; j < end - 1; j++) typoCounts[o[j] - 97]++;
  for (const c of cands) {
    let same = true;
    for (let k = 0; k < 26 && same; k++) same = c.counts[k] === typoCounts[k];
    if (same) return c.word;
  }
  return null;
}

/** Character classes of ASCII code units, as bit flags (0 for everything else). */
const C_LOWER = 1;
const C_DIGIT = 2;
const C_LEET = 4; // [0-9@$|]
const C_B64 = 8; // [A-Za-z0-9+/_-]
const C_HEX = 16;
const C_UPPER = 32;
const CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  CLASS[c] = (/[a-z]/.test(ch) ? C_LOWER : 0) | (/[0-9]/.test(ch) ? C_DIGIT : 0) | (/[0-9@$|]/.test(ch) ? C_LEET : 0) | (/[A-Za-z0-9+/_-]/.test(ch) ? C_B64 : 0) | (/[0-9a-fA-F]/.test(ch) ? C_HEX : 0) | (/[A-Z]/.test(ch) ? C_UPPER : 0);
}

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
let scratchIn = new Uint8Array(0);
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
  const n = base.length;
  // Lower-casing adds at most one character per character (U+0130 → "i\u0307").
  if (scratchIn.length < 2 * n) scratchIn = new Uint8Array(Math.max(2 * n, 2 * scratchIn.length));
  if (scratchOut.length < 2 * n + 2) scratchOut = Buffer.alloc(Math.max(2 * n + 2, 2 * scratchOut.length));
  const u = scratchIn;
  const o = scratchOut;
  // Pass 1: lower-cased byte copy. Of the non-ASCII characters only U+0130 and U+212A lower-case to
  // something holding ASCII ("i\u0307", "k"); every other one stays non-ASCII (one OTHER byte).
  // Leetspeak is undone in each run of [a-z0-9@$|] that holds a letter and a leet character.
  let m = 0;
  let tok = -1;
  let letter = false;
  let leet = false;
  for (let i = 0; i <= n; i++) {
    let c = i < n ? base.charCodeAt(i) : OTHER;
    if (c === 0x212a) c = 107;
    else if (c === 0x130) {
      // "i\u0307": the i starts or extends a token, the mark ends it.
      if (tok < 0) tok = m;
      letter = true;
      u[m++] = 105;
      c = OTHER;
    }
    if (c < 128) {
      const k = CLASS[c];
      if (k & C_UPPER) c += 32;
      if (k & (C_UPPER | C_LOWER)) {
        if (tok < 0) tok = m;
        letter = true;
        u[m++] = c;
        continue;
      }
      if (k & C_LEET) {
        if (tok < 0) tok = m;
        leet = true;
        u[m++] = c;
        continue;
      }
    }
    if (tok >= 0) {
      if (letter && leet) for (let j = tok; j < m; j++) if (!isLower(u[j])) u[j] = LEET_CODE[u[j]];
      tok = -1;
      letter = false;
      leet = false;
    }
    if (i === n) break;
    u[m++] = c < 128 ? c : OTHER;
  }
  // Pass 2: words (spelled-out letters joined, scrambled key words restored) separated by one space.
  let len = 0;
  o[len++] = SPACE;
  let i = 0;
  while (i < m) {
    if (!isAlnum(u[i])) {
      i++;
      continue;
    }
    if (len > 1) o[len++] = SPACE;
    const start = len;
    const s = i;
    let letters = true;
    for (; i < m; i++) {
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
      while (p + 2 < m && isSpellSep(u[p + 1]) && isAlnum(u[p + 2]) && (p + 3 >= m || !isWordChar(u[p + 3]))) {
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
    if (letters && wl >= 5 && wl <= 12) {
      const cands = TYPO_BY_SHAPE.get(shapeKey(o[start], o[len - 1], wl));
      const fixed = cands ? typoMatch(o, start, len, cands) : null;
      if (fixed) o.set(fixed, start);
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

/** Limit on decoded views per text, so a hostile input of many short spans stays cheap. */
const MAX_DECODED = 16;


/**
 * Embedded encoded spans decoded to text: base64 (standard and URL-safe), hex, URL (percent)
 * encoding. Only spans that decode to readable text are returned.
 *
 * Spans are found by one scan each, with the same matches as /[A-Za-z0-9+/_-]{16,}={0,2}/g (every
 * maximal run of ≥ 16 base64 characters, with up to two '=' after it) and /(?:[0-9a-fA-F]{2}){8,}/g
 * (every maximal run of ≥ 16 hex digits, cut to an even length).
 */
export function decodedViews(base: string): string[] {
  // One scan finds the base64 runs, the hex runs (hex digits are base64 characters, so they lie
  // inside base64 runs) and whether there is a URL escape (%XX); the views are then made in the
  // previous order: URL-decoded text, base64 spans, hex spans, at most MAX_DECODED in all.
  const n = base.length;
  const b64: number[] = [];
  const hex: number[] = [];
  let urlEscape = false;
  let b64Start = -1;
  let hexStart = -1;
  let upper = false;
  let lower = false;
  for (let i = 0; i <= n; i++) {
    const c = i < n ? base.charCodeAt(i) : 0;
    const k = c < 128 ? CLASS[c] : 0;
    if (k & C_HEX) {
      if (hexStart < 0) hexStart = i;
    } else if (hexStart >= 0) {
      if (i - hexStart >= 16) hex.push(hexStart, hexStart + ((i - hexStart) & ~1));
      hexStart = -1;
    }
    if (k & C_B64) {
      if (b64Start < 0) b64Start = i;
      if (k & C_UPPER) upper = true;
      else if (k & C_LOWER) lower = true;
      continue;
    }
    if (b64Start >= 0) {
      if (i - b64Start >= 16 && upper && lower) {
        let e = i;
        if (e < n && c === 61) e += e + 1 < n && base.charCodeAt(e + 1) === 61 ? 2 : 1;
        b64.push(b64Start, e);
      }
      b64Start = -1;
      upper = false;
      lower = false;
    }
    if (c === 37 && !urlEscape && i + 2 < n) {
      const c1 = base.charCodeAt(i + 1);
      const c2 = base.charCodeAt(i + 2);
      urlEscape = c1 < 128 && c2 < 128 && (CLASS[c1] & C_HEX) !== 0 && (CLASS[c2] & C_HEX) !== 0;
    }
  }
  const out: string[] = [];
  if (urlEscape) {
    const d = base.replace(/(?:%[0-9A-Fa-f]{2})+/g, (m) => {
      try {
        return decodeURIComponent(m);
      } catch {
        return m;
      }
    });
    if (d !== base) out.push(d.replace(/\+/g, ' '));
  }
  for (let j = 0; j < b64.length && out.length < MAX_DECODED; j += 2) {
    const d = Buffer.from(base.slice(b64[j], b64[j + 1]).replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8');
    if (printable(d)) out.push(d);
  }
  for (let j = 0; j < hex.length && out.length < MAX_DECODED; j += 2) {
    const d = Buffer.from(base.slice(hex[j], hex[j + 1]), 'hex').toString('utf8');
    if (printable(d)) out.push(d);
  }
  return out;
}
