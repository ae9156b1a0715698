/**
 * IBANs of every registry country and national identity numbers, found in one pass over the text:
 * at each token start (a letter or digit after a non-alphanumeric character) the token is read once
 * and classified by its shape; only a token of an id's shape gets its check digits computed. An id
 * whose checksum is weak (a random number passes one time in ten or eleven) counts only next to a
 * label naming it ("PESEL", "BSN", "national id"…); an id with a distinctive shape and a strong check
 * (IBAN, codice fiscale, CPF written 000.000.000-00, Chinese resident id…) counts on its own.
 */
import * as C from './pii-checks';
import type { Span } from './span';

const isDigit = (c: number) => c >= 48 && c <= 57;
const isUpper = (c: number) => c >= 65 && c <= 90;
const isAlnum = (c: number) => isDigit(c) || isUpper(c) || (c >= 97 && c <= 122);

/** Labels that name a national id, searched in the 48 characters before a candidate (lower case). */
const ID_LABEL =
  /\b(?:national (?:id|identity|insurance|number)|id(?:entity|entification)? (?:no|nr|number|card)|personal (?:id|number|code)|citizen|tax (?:id|file|number|code)|social (?:security|insurance)|ssn|bsn|burgerservicenummer|pesel|nif|nie|dni|cpf|rut|run|nir|insee|sécurité sociale|securite sociale|steuer|personnummer|fødselsnummer|fodselsnummer|fnr|hetu|henkilötunnus|tc kimlik|kimlik|tckn|nhs|tfn|teudat|zehut|rijksregister|registre national|numéro national|cpr|ahv|avs|nric|curp)\b/;
function labelled(text: string, start: number): boolean {
  return ID_LABEL.test(text.slice(Math.max(0, start - 48), start).toLowerCase());
}

/** An IBAN at i (two letters, two digits, then groups of four with optional single spaces), or its end. */
function ibanAt(text: string, i: number): number {
  const len = C.IBAN_LENGTH[text.slice(i, i + 2)];
  if (!len) return -1;
  let compact = '';
  let j = i;
  while (j < text.length && compact.length < len) {
    const c = text.charCodeAt(j);
    if (isDigit(c) || isUpper(c)) compact += text[j++];
    else if (c === 32 && isAlnum(text.charCodeAt(j + 1)) && compact.length >= 4) j++;
    else break;
  }
  if (compact.length !== len || isAlnum(text.charCodeAt(j))) return -1;
  return C.ibanValid(compact) ? j : -1;
}

const LETTER_IDS: { re: RegExp; valid: (s: string) => boolean }[] = [
  { re: /^[XYZ]\d{7}[A-Z]$/, valid: C.esDniValid },
  { re: /^[STFGM]\d{7}[A-Z]$/, valid: C.sgNricValid },
  { re: /^[A-Z]{6}\d{2}[A-EHLMPR-T]\d{2}[A-Z]\d{3}[A-Z]$/, valid: C.itFiscalValid },
];

// The written shapes of digit-led ids, compiled once (digitId runs at every long digit group).
const SEPARATORS = /[ .\-/]/g;
const CPF_WRITTEN = /^\d{3}\.\d{3}\.\d{3}-\d{2}$/;
const AHV_WRITTEN = /^756\.\d{4}\.\d{4}\.\d{2}$/;
const BE_NRN_WRITTEN = /^\d{2}\.\d{2}\.\d{2}-\d{3}\.\d{2}$/;
const RUT_BODY = /^\d{1,2}\.\d{3}\.\d{3}$/;
const RUT_WRITTEN = /^\d{1,2}\.\d{3}\.\d{3}-\d$/;
const SE_PERSONNUMMER = /^(?:\d{6}|\d{8})-\d{4}$/;
const RUT_CHECK = /^[0-9kK]$/;

/** The id a digit-led group is, if its shape and checksum say so (and a label where the check is weak). */
function digitId(text: string, start: number, raw: string, next: number): boolean {
  const digits = raw.replace(SEPARATORS, '');
  const n = digits.length;
  const plain = n === raw.length;
  if (CPF_WRITTEN.test(raw)) return C.brCpfValid(digits);
  if (AHV_WRITTEN.test(raw)) return C.chAhvValid(digits);
  if (BE_NRN_WRITTEN.test(raw)) return C.beNrnValid(digits);
  if (RUT_BODY.test(raw) && next === 45) return rutAt(text, start + raw.length, digits);
  if (RUT_WRITTEN.test(raw)) return C.clRutValid(digits.slice(0, -1), digits.slice(-1));
  if (n === 15 && (digits[0] === '1' || digits[0] === '2') && C.frNirValid(digits)) return true;
  if (n === 17 && next === 88) return C.cnIdValid(digits + 'X');
  if (n === 18 && plain) return C.cnIdValid(digits);
  if (SE_PERSONNUMMER.test(raw)) return C.sePersonnummerValid(digits) || (labelled(text, start) && raw[6] === '-');
  if (n === 8 && plain && isUpper(next) && !isAlnum(text.charCodeAt(start + 9))) return C.esDniValid(digits + text[start + 8]);
  if (!labelled(text, start)) return false;
  if (n === 9) return C.nlBsnValid(digits) || C.auTfnValid(digits) || C.ilIdValid(digits);
  if (n === 10) return C.nhsValid(digits);
  if (n === 11) return C.plPeselValid(digits) || C.noFnrValid(digits) || C.trTcValid(digits) || C.brCpfValid(digits) || C.beNrnValid(digits);
  if (n === 13) return C.zaIdValid(digits);
  return false;
}

function rutAt(text: string, dash: number, digits: string): boolean {
  const check = text[dash + 1] ?? '';
  return RUT_CHECK.test(check) && !isAlnum(text.charCodeAt(dash + 2)) && C.clRutValid(digits, check);
}

/** Finland HETU at i: DDMMYY, a century sign, 3 digits and a check character. */
const HETU = /\d{6}[-+A-FU-Y]\d{3}[0-9A-Y](?![A-Za-z0-9])/y;

/**
 * The IBAN or national id starting at i, a token start (the character before is not [A-Za-z0-9])
 * whose character c is an upper-case letter or a digit (no id starts otherwise), or null.
 */
export function idAt(text: string, i: number, c: number): Span | null {
  const n = text.length;
  if (isUpper(c) && isUpper(text.charCodeAt(i + 1)) && isDigit(text.charCodeAt(i + 2)) && isDigit(text.charCodeAt(i + 3))) {
    const end = ibanAt(text, i);
    if (end > 0) return { start: i, end, kind: 'IBAN' };
  }
  if (isUpper(c)) {
    let j = i;
    while (j < n && j - i <= 18 && (isDigit(text.charCodeAt(j)) || isUpper(text.charCodeAt(j)))) j++;
    // Only the lengths of the letter-led ids (9, 16) are read further.
    if ((j - i === 9 || j - i === 16) && !isAlnum(text.charCodeAt(j))) {
      const tok = text.slice(i, j);
      if (LETTER_IDS.some((x) => x.re.test(tok) && x.valid(tok))) return { start: i, end: j, kind: 'NATIONAL_ID' };
    }
    return null;
  }
  HETU.lastIndex = i;
  // Six digits then a century sign (never a digit): most digit tokens fail this before the regex runs.
  if (isDigit(text.charCodeAt(i + 5)) && !isDigit(text.charCodeAt(i + 6)) && HETU.test(text) && C.fiHetuValid(text.slice(i, i + 11))) return { start: i, end: i + 11, kind: 'NATIONAL_ID' };
  // A digit group: digits with single separators (space . - /) between them.
  let j = i;
  while (j < n && j - i < 24) {
    const cj = text.charCodeAt(j);
    if (isDigit(cj)) j++;
    else if ((cj === 32 || cj === 46 || cj === 45 || cj === 47) && isDigit(text.charCodeAt(j + 1))) j++;
    else break;
  }
  const next = text.charCodeAt(j);
  if (j - i >= 8 && (next !== next || !isAlnum(next) || next === 88 || isUpper(next)) && digitId(text, i, text.slice(i, j), next)) {
    return { start: i, end: next === 88 && j - i >= 17 ? j + 1 : next === 45 ? j + 2 : isUpper(next) && j - i === 8 ? j + 1 : j, kind: 'NATIONAL_ID' };
  }
  return null;
}

/** Spans of IBANs ('IBAN') and national ids ('NATIONAL_ID'). */
export function idSpans(text: string, first = false): Span[] {
  const out: Span[] = [];
  const n = text.length;
  let prevAlnum = false;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    const alnum = isAlnum(c);
    if (alnum && !prevAlnum && (isUpper(c) || isDigit(c))) {
      const id = idAt(text, i, c);
      if (id) {
        out.push(id);
        if (first) return out;
        // The id's last character is a letter or digit: the next token start is after it.
        i = id.end - 1;
        prevAlnum = true;
        continue;
      }
    }
    prevAlnum = alnum;
  }
  return out;
}
