/**
 * Personal data that is only personal in context: a date of birth (a date after a birth cue, with a
 * person's name near it) and a postal address (after a personal cue: "I live at", "my address is",
 * "ship to"). A date or an address alone is not flagged: history, schedules and company addresses
 * are ordinary text. The cues are found with indexOf on the lower-cased text; regexes run only on
 * the few characters after a cue.
 */
import type { Span } from './span';

const BIRTH_CUES = ['date of birth', 'birth date', 'birthdate', 'birthday', 'born ', 'dob', 'd.o.b', 'geboren', 'geburtsdatum', 'né le', 'née le', 'date de naissance', 'fecha de nacimiento', 'nacido el', 'nacida el', 'data di nascita'];
const MONTHS = 'jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|januar|februar|märz|mai|juni|juli|oktober|dezember|janvier|février|mars|avril|juin|juillet|août|septembre|octobre|novembre|décembre|enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre|diciembre';
/** A date right after the cue (a separator and at most a few words between). */
const DATE_AFTER = new RegExp(
  `^[^\\n\\d]{0,16}?((?:\\d{1,2}[./-]\\d{1,2}[./-](?:19|20)\\d{2}|(?:19|20)\\d{2}-\\d{2}-\\d{2}|\\d{1,2}(?:st|nd|rd|th)?\\.? (?:of )?(?:${MONTHS})\\.?,? (?:19|20)\\d{2}|(?:${MONTHS})\\.? \\d{1,2}(?:st|nd|rd|th)?,? (?:19|20)\\d{2}))(?!\\d)`,
  'i',
);
/** A person's name: two or three capitalised words (Jane Doe, María José García), or a "name:" label. */
const NAME = /(?:^|[^\p{L}])(?:\p{Lu}\p{Ll}+(?:[-'’]\p{Lu}?\p{Ll}+)?\s){1,2}\p{Lu}\p{Ll}+|\b[Nn]ame\s*[:=]\s*\S/u;
/** Capitalised words that start sentences or name months and places, not people. */
const NOT_NAMES = /^(?:The|This|That|My|Our|His|Her|Their|Date|Born|Birth|Please|Patient|Name|Dear|Hello|Hi|New|San|Los|Las|United|North|South|East|West)\s/;

const isAsciiLower = (c: number) => c >= 97 && c <= 122;

function hasName(window: string): boolean {
  const m = NAME.exec(window);
  if (!m) return false;
  const s = m[0].replace(/^[^\p{L}]/u, '');
  return !NOT_NAMES.test(s) || /\bname\s*[:=]/i.test(m[0]) || NAME.test(window.slice(m.index + m[0].length));
}

function* birthDates(text: string, lower: string): Generator<Span> {
  for (const cue of BIRTH_CUES) {
    for (let at = lower.indexOf(cue); at >= 0; at = lower.indexOf(cue, at + cue.length)) {
      if (at > 0 && isAsciiLower(lower.charCodeAt(at - 1))) continue;
      const after = at + cue.length;
      const m = DATE_AFTER.exec(text.slice(after, after + 48));
      if (!m) continue;
      const start = after + m[0].length - m[1].length;
      const lineStart = text.lastIndexOf('\n', at) + 1;
      const window = text.slice(Math.max(0, at - 80, lineStart - 80), Math.min(text.length, after + 80));
      if (hasName(window)) yield { start, end: start + m[1].length, kind: 'DATE_OF_BIRTH' };
    }
  }
}

const ADDRESS_CUES = ['my address', 'my home address', 'home address', 'i live at', 'i live on', 'lives at', 'living at', 'residing at', 'resides at', 'reside at', 'ship to', 'deliver to', 'send it to', 'mailing address', 'postal address', 'billing address', 'shipping address', 'meine adresse', 'ich wohne in der', 'wohnhaft in', 'mon adresse', "j'habite au", 'mi dirección', 'vivo en'];
const STREET = '(?:street|st|road|rd|avenue|ave|lane|ln|drive|dr|boulevard|blvd|way|court|ct|place|pl|terrace|close|crescent|square|sq|highway|hwy|parkway|pkwy|straße|strasse|str|weg|gasse|allee|platz|rue|avenue|boulevard|chemin|calle|avenida|via|viale|piazza|plaza|laan|straat|gracht)';
/** A street address after the cue: a house number and street (either order), or a UK/US/DE postcode with a street. */
const ADDRESS_AFTER = new RegExp(
  `^(?:\\s*(?:is|was|:|-|=|is at)?\\s*)(?:\\p{Lu}[\\p{L}'.-]*(?: \\p{L}[\\p{L}'.-]*){0,3}, )?((?:\\d{1,5}[a-z]?,? (?:[\\p{L}.'-]+ ){0,4}${STREET}\\.?|(?:[\\p{L}.'-]+ ){0,3}\\p{L}*${STREET}\\.? \\d{1,5}[a-z]?|(?:${STREET}) (?:[\\p{L}.'-]+ ){0,3}\\d{1,5})(?:[^\\n]{0,80}?(?=[.!?](?:\\s|$)|\\n|$)|[^\\n]{0,80}))`,
  'iu',
);

function* addresses(text: string, lower: string): Generator<Span> {
  for (const cue of ADDRESS_CUES) {
    for (let at = lower.indexOf(cue); at >= 0; at = lower.indexOf(cue, at + cue.length)) {
      if (at > 0 && isAsciiLower(lower.charCodeAt(at - 1))) continue;
      const after = at + cue.length;
      const m = ADDRESS_AFTER.exec(text.slice(after, after + 160));
      if (!m) continue;
      const start = after + m[0].length - m[1].length;
      yield { start, end: start + m[1].replace(/[\s,;:]+$/, '').length, kind: 'ADDRESS' };
    }
  }
}

/**
 * Any cue at all, one regex pass instead of one indexOf pass per cue (most texts have none, and
 * then the per-cue loops are skipped). Short parts several cues share stand for those cues (a text
 * holding a cue holds its part), so the pattern has fewer, shorter alternatives.
 */
const CUE_PARTS = ['birth', 'geb', 'né', 'naissance', 'naci', 'nascita', 'address', 'adresse', 'i live', 'resid', 'wohn'];
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const ANY_CUE = new RegExp([...CUE_PARTS, ...[...BIRTH_CUES, ...ADDRESS_CUES].filter((c) => !CUE_PARTS.some((p) => c.includes(p)))].map(escape).join('|'));

/** Dates of birth next to a name, and postal addresses after a personal cue. */
export function contextSpans(text: string, first = false): Span[] {
  const out: Span[] = [];
  let lower = text.toLowerCase();
  // A few characters change length in lower case (İ); positions must stay those of the text.
  if (lower.length !== text.length) lower = text.replace(/[A-Z]/g, (ch) => ch.toLowerCase());
  if (!ANY_CUE.test(lower)) return out;
  for (const s of birthDates(text, lower)) {
    out.push(s);
    if (first) return out;
  }
  for (const s of addresses(text, lower)) {
    out.push(s);
    if (first) return out;
  }
  return out;
}
