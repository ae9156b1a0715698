/** Check digits of account and national identity numbers (each function takes the compact value). */

const d = (s: string, i: number) => s.charCodeAt(i) - 48;

export function luhn(digits: string): boolean {
  let sum = 0;
  let dbl = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let n = d(digits, i);
    if (dbl) {
      n *= 2;
      if (n > 9) n -= 9;
    }
    sum += n;
    dbl = !dbl;
  }
  return sum % 10 === 0;
}

/** Remainder mod 97 of a string of digits and letters (A = 10 … Z = 35), as IBAN and ISO 7064 use it. */
export function mod97(s: string): number {
  let rem = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) rem = (rem * 10 + c - 48) % 97;
    else rem = (rem * 100 + c - 55) % 97;
  }
  return rem;
}

/** IBAN lengths of the countries in the SWIFT IBAN registry. */
export const IBAN_LENGTH: Record<string, number> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BI: 27, BR: 29, BY: 28, CH: 21, CR: 22, CY: 28,
  CZ: 24, DE: 22, DJ: 27, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FK: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23,
  GL: 18, GR: 27, GT: 28, HN: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28,
  LC: 32, LI: 21, LT: 20, LU: 20, LV: 21, LY: 25, MC: 27, MD: 24, ME: 22, MK: 19, MN: 20, MR: 27, MT: 31, MU: 30, NI: 28,
  NL: 18, NO: 15, OM: 23, PK: 24, PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, RU: 33, SA: 24, SC: 31, SD: 18, SE: 24,
  SI: 19, SK: 24, SM: 27, SO: 23, ST: 25, SV: 28, TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24, XK: 20, YE: 30,
}; // prettier-ignore

export function ibanValid(s: string): boolean {
  if (IBAN_LENGTH[s.slice(0, 2)] !== s.length) return false;
  return mod97(s.slice(4) + s.slice(0, 4)) === 1;
}

const weighted = (s: string, w: number[]) => w.reduce((a, x, i) => a + x * d(s, i), 0);

/** Spain DNI (8 digits + letter) and NIE (X/Y/Z + 7 digits + letter). */
export function esDniValid(s: string): boolean {
  const n = s.replace(/^X/, '0').replace(/^Y/, '1').replace(/^Z/, '2');
  if (!/^\d{8}[A-Z]$/.test(n)) return false;
  return 'TRWAGMYFPDXBNJZSQVHLCKE'[Number(n.slice(0, 8)) % 23] === n[8];
}

/** Italy codice fiscale: 16 characters, the last a check letter over odd/even position values. */
const CF_ODD = [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23];
export function itFiscalValid(s: string): boolean {
  let sum = 0;
  for (let i = 0; i < 15; i++) {
    const c = s.charCodeAt(i);
    const v = c <= 57 ? c - 48 : c - 65;
    sum += i % 2 === 0 ? CF_ODD[v] : v;
  }
  return String.fromCharCode(65 + (sum % 26)) === s[15];
}

/** France NIR: 13 digits (sex, year, month, place, order) and a 2-digit key 97 - n mod 97 (Corsica 2A/2B as 19/18). */
export function frNirValid(s: string): boolean {
  const body = s.slice(0, 13).replace('2A', '19').replace('2B', '18');
  if (!/^[12]\d{12}$/.test(body) && !/^[12]\d{4}(?:19|18)\d{7}$/.test(body)) return false;
  const month = Number(s.slice(3, 5));
  if (!((month >= 1 && month <= 12) || (month >= 20 && month <= 42) || month >= 50)) return false;
  return 97 - Number(BigInt(body) % 97n) === Number(s.slice(13));
}

/** Netherlands BSN: 9 digits, the eleven test (last weight -1). */
export const nlBsnValid = (s: string) => (weighted(s, [9, 8, 7, 6, 5, 4, 3, 2]) - d(s, 8)) % 11 === 0 && s !== '000000000';

/** Poland PESEL: 11 digits, weights 1 3 7 9. */
export const plPeselValid = (s: string) => (10 - (weighted(s, [1, 3, 7, 9, 1, 3, 7, 9, 1, 3]) % 10)) % 10 === d(s, 10);

/** Brazil CPF: 11 digits, two mod-11 check digits. */
export function brCpfValid(s: string): boolean {
  if (/^(\d)\1{10}$/.test(s)) return false;
  const c1 = (weighted(s, [10, 9, 8, 7, 6, 5, 4, 3, 2]) * 10) % 11 % 10;
  const c2 = (weighted(s, [11, 10, 9, 8, 7, 6, 5, 4, 3, 2]) * 10) % 11 % 10;
  return c1 === d(s, 9) && c2 === d(s, 10);
}

/** China resident identity number: 17 digits and an ISO 7064 mod 11-2 check character (0-9, X), a birth date inside. */
export function cnIdValid(s: string): boolean {
  const w = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
  const y = Number(s.slice(6, 10));
  const m = Number(s.slice(10, 12));
  if (y < 1900 || y > 2100 || m < 1 || m > 12) return false;
  return '10X98765432'[weighted(s, w) % 11] === s[17];
}

/** Sweden personnummer: YYMMDD-NNNN (or YYYYMMDD-NNNN), Luhn over the 10-digit form. */
export const sePersonnummerValid = (s: string) => luhn(s.length === 12 ? s.slice(2) : s) && Number(s.slice(s.length - 8, s.length - 6)) <= 12;

/** Finland HETU: DDMMYY, century sign, 3 digits, a check character mod 31. */
export function fiHetuValid(s: string): boolean {
  const n = Number(s.slice(0, 6) + s.slice(7, 10));
  return '0123456789ABCDEFHJKLMNPRSTUVWXY'[n % 31] === s[10] && Number(s.slice(2, 4)) >= 1 && Number(s.slice(2, 4)) <= 12;
}

/** Norway fødselsnummer: 11 digits, two mod-11 check digits. */
export function noFnrValid(s: string): boolean {
  const k1 = (11 - (weighted(s, [3, 7, 6, 1, 8, 9, 4, 5, 2]) % 11)) % 11;
  const k2 = (11 - (weighted(s, [5, 4, 3, 2, 7, 6, 5, 4, 3, 2]) % 11)) % 11;
  return k1 === d(s, 9) && k2 === d(s, 10);
}

/** Switzerland AHV/AVS: 756 and 10 digits, an EAN-13 check digit. */
export function chAhvValid(s: string): boolean {
  if (!s.startsWith('756')) return false;
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += d(s, i) * (i % 2 === 0 ? 1 : 3);
  return (10 - (sum % 10)) % 10 === d(s, 12);
}

/** Singapore NRIC/FIN: a prefix letter, 7 digits, a check letter. */
export function sgNricValid(s: string): boolean {
  const sum = weighted(s.slice(1), [2, 7, 6, 5, 4, 3, 2]) + (s[0] === 'T' || s[0] === 'G' ? 4 : s[0] === 'M' ? 3 : 0);
  const table = s[0] === 'S' || s[0] === 'T' ? 'JZIHGFEDCBA' : s[0] === 'M' ? 'KLJNPQRTUWX' : 'XWUTRQPNMLK';
  return table[sum % 11] === s[8];
}

/** Chile RUT/RUN: body digits and a mod-11 check (0-9 or K). */
export function clRutValid(body: string, check: string): boolean {
  let sum = 0;
  let m = 2;
  for (let i = body.length - 1; i >= 0; i--) {
    sum += d(body, i) * m;
    m = m === 7 ? 2 : m + 1;
  }
  const r = 11 - (sum % 11);
  return (r === 11 ? '0' : r === 10 ? 'K' : String(r)) === check.toUpperCase();
}

/** Belgium national register number: YYMMDD + 3 digits + 2-digit key 97 - n mod 97 (born from 2000: 2 prefixed). */
export function beNrnValid(s: string): boolean {
  const key = Number(s.slice(9));
  const n = Number(s.slice(0, 9));
  return 97 - (n % 97) === key || 97 - ((2000000000 + n) % 97) === key;
}

/** Turkey TC Kimlik: 11 digits, first not 0, two check digits. */
export function trTcValid(s: string): boolean {
  if (s[0] === '0') return false;
  const odd = d(s, 0) + d(s, 2) + d(s, 4) + d(s, 6) + d(s, 8);
  const even = d(s, 1) + d(s, 3) + d(s, 5) + d(s, 7);
  const c10 = (((odd * 7 - even) % 10) + 10) % 10;
  return c10 === d(s, 9) && (odd + even + c10) % 10 === d(s, 10);
}

/** UK NHS number: 10 digits, mod 11. */
export function nhsValid(s: string): boolean {
  const r = 11 - (weighted(s, [10, 9, 8, 7, 6, 5, 4, 3, 2]) % 11);
  const c = r === 11 ? 0 : r;
  return c !== 10 && c === d(s, 9);
}

/** Australia TFN: 9 digits, weighted sum divisible by 11. */
export const auTfnValid = (s: string) => weighted(s, [1, 4, 3, 7, 5, 8, 6, 9, 10]) % 11 === 0;

/** Israel Teudat Zehut: 9 digits, Luhn-like (digit sums of 1,2 weights). */
export const ilIdValid = (s: string) => luhn(s);

/** South Africa ID: 13 digits (YYMMDD…), Luhn. */
export const zaIdValid = (s: string) => luhn(s) && Number(s.slice(2, 4)) >= 1 && Number(s.slice(2, 4)) <= 12;
