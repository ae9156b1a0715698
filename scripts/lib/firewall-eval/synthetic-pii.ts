/** Synthetic personal data with valid checksums (cards, IBANs, national numbers), e-mails and phones. */
import { makeCase, type EvalCase } from './cases';
import { DIG, UP, type Rng } from './rng';

export function luhnDigit(body: string): string {
  let sum = 0;
  let dbl = true;
  for (let i = body.length - 1; i >= 0; i--) {
    let n = body.charCodeAt(i) - 48;
    if (dbl) {
      n *= 2;
      if (n > 9) n -= 9;
    }
    sum += n;
    dbl = !dbl;
  }
  return String((10 - (sum % 10)) % 10);
}
function mod97(s: string): number {
  let rem = 0;
  for (const ch of s) {
    const v = /[0-9]/.test(ch) ? ch : String(ch.charCodeAt(0) - 55);
    for (const d of v) rem = (rem * 10 + (d.charCodeAt(0) - 48)) % 97;
  }
  return rem;
}
const IBAN_BBAN: Record<string, (r: Rng) => string> = {
  DE: (r) => r.chars(DIG, 18),
  GB: (r) => r.chars(UP, 4) + r.chars(DIG, 14),
  FR: (r) => r.chars(DIG, 10) + r.chars(UP + DIG, 11) + r.chars(DIG, 2),
  ES: (r) => r.chars(DIG, 20),
  NL: (r) => r.chars(UP, 4) + r.chars(DIG, 10),
  IT: (r) => r.chars(UP, 1) + r.chars(DIG, 10) + r.chars(UP + DIG, 12),
  BE: (r) => r.chars(DIG, 12),
  CH: (r) => r.chars(DIG, 5) + r.chars(UP + DIG, 12),
};
function iban(r: Rng, spaced: boolean): string {
  const cc = r.pick(Object.keys(IBAN_BBAN));
  const bban = IBAN_BBAN[cc](r);
  const check = String(98 - mod97(bban + cc + '00')).padStart(2, '0');
  const s = cc + check + bban;
  return spaced ? s.replace(/(.{4})/g, '$1 ').trim() : s;
}
// Verhoeff (Aadhaar check digit).
const VD = [[0,1,2,3,4,5,6,7,8,9],[1,2,3,4,0,6,7,8,9,5],[2,3,4,0,1,7,8,9,5,6],[3,4,0,1,2,8,9,5,6,7],[4,0,1,2,3,9,5,6,7,8],[5,9,8,7,6,0,4,3,2,1],[6,5,9,8,7,1,0,4,3,2],[7,6,5,9,8,2,1,0,4,3],[8,7,6,5,9,3,2,1,0,4],[9,8,7,6,5,4,3,2,1,0]]; // prettier-ignore
const VP = [[0,1,2,3,4,5,6,7,8,9],[1,5,7,6,2,8,3,0,9,4],[5,8,0,3,7,9,6,1,4,2],[8,9,1,6,0,4,3,5,2,7],[9,4,5,3,1,2,6,8,7,0],[4,2,8,6,5,7,3,9,0,1],[2,7,9,3,8,0,6,4,1,5],[7,0,4,6,9,1,3,2,5,8]]; // prettier-ignore
const VINV = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9];
function verhoeffDigit(body: string): string {
  let c = 0;
  const d = body.split('').reverse();
  for (let i = 0; i < d.length; i++) c = VD[c][VP[(i + 1) % 8][Number(d[i])]];
  return String(VINV[c]);
}
const NAMES = ['Maria Lopez', 'James Carter', 'Aisha Khan', 'Tom Becker', 'Li Wei', 'Sophie Martin', 'Oluwaseun Adeyemi', 'Anna Nowak'];
function card(r: Rng): string {
  const kind = r.pick(['visa', 'mc', 'amex', 'disc']);
  const prefix = kind === 'visa' ? '4' : kind === 'mc' ? r.pick(['51', '52', '53', '54', '55', '2221', '2720']) : kind === 'amex' ? r.pick(['34', '37']) : '6011';
  const len = kind === 'amex' ? 15 : 16;
  const body = prefix + r.chars(DIG, len - 1 - prefix.length);
  const full = body + luhnDigit(body);
  const sep = r.pick(['', ' ', '-']);
  return kind === 'amex' ? [full.slice(0, 4), full.slice(4, 10), full.slice(10)].join(sep) : full.replace(/(\d{4})(?=\d)/g, `$1${sep}`);
}
function ssn(r: Rng): string {
  let area = 0;
  while (area === 0 || area === 666 || area >= 900) area = 1 + r.int(899);
  return `${String(area).padStart(3, '0')}-${String(1 + r.int(98)).padStart(2, '0')}-${String(1 + r.int(9998)).padStart(4, '0')}`;
}
function nino(r: Rng): string {
  const first = 'ABCEGHJKLMNPRSTWXYZ';
  const second = 'ABCEGHJKLMNPRSTWXYZ';
  let p = 'GB';
  while (['BG', 'GB', 'NK', 'KN', 'TN', 'NT', 'ZZ'].includes(p)) p = r.pick([...first]) + r.pick([...second]);
  const d = r.chars(DIG, 6);
  return r.next() < 0.5 ? `${p}${d}${r.pick(['A', 'B', 'C', 'D'])}` : `${p} ${d.slice(0, 2)} ${d.slice(2, 4)} ${d.slice(4)} ${r.pick(['A', 'B', 'C', 'D'])}`;
}
function sin(r: Rng): string {
  const body = String(1 + r.int(7)) + r.chars(DIG, 7);
  const s = body + luhnDigit(body);
  return `${s.slice(0, 3)} ${s.slice(3, 6)} ${s.slice(6)}`;
}
function aadhaar(r: Rng): string {
  const body = String(2 + r.int(8)) + r.chars(DIG, 10);
  const s = body + verhoeffDigit(body);
  return `${s.slice(0, 4)} ${s.slice(4, 8)} ${s.slice(8)}`;
}
function phone(r: Rng): string {
  return r.pick([
    () => `(${2 + r.int(8)}${r.chars(DIG, 2)}) ${2 + r.int(8)}${r.chars(DIG, 2)}-${r.chars(DIG, 4)}`,
    () => `+1 ${2 + r.int(8)}${r.chars(DIG, 2)} ${2 + r.int(8)}${r.chars(DIG, 2)} ${r.chars(DIG, 4)}`,
    () => `+44 7${r.chars(DIG, 3)} ${r.chars(DIG, 6)}`,
    () => `+49 151 ${r.chars(DIG, 8)}`,
    () => `+33 6 ${r.chars(DIG, 2)} ${r.chars(DIG, 2)} ${r.chars(DIG, 2)} ${r.chars(DIG, 2)}`,
  ])();
}
function personalEmail(r: Rng): string {
  const [f, l] = r.pick(NAMES).toLowerCase().split(' ');
  return `${r.pick([`${f}.${l}`, `${f}${r.int(99)}`, `${f[0]}${l}`])}@${r.pick(['gmail.com', 'outlook.com', 'yahoo.co.uk', 'web.de', 'proton.me'])}`;
}

export function generatedPii(r: Rng): EvalCase[] {
  const out: EvalCase[] = [];
  const add = (kind: string, texts: Array<() => string>, n: number, requires?: EvalCase['requires']) => {
    for (let i = 0; i < n; i++) out.push(makeCase('pii', 'synthetic-pii', r.pick(texts)(), { kind, ...(requires ? { requires } : {}) }));
  };
  const name = () => r.pick(NAMES);
  add('card', [
    () => `Charge my card ${card(r)}, expiry 0${1 + r.int(9)}/2${7 + r.int(3)}, CVV ${r.chars(DIG, 3)}.`,
    () => `Customer ${name()} paid with ${card(r)} — please refund the last order.`,
    () => `card number: ${card(r)}`,
    () => `Can you check why the payment with ${card(r)} was declined?`,
  ], 60);
  add('iban', [
    () => `Please wire the deposit to IBAN ${iban(r, true)} (account holder ${name()}).`,
    () => `My bank details: ${iban(r, false)}`,
    () => `Update the supplier's account to ${iban(r, r.next() < 0.5)} before Friday.`,
  ], 50);
  add('us_ssn', [
    () => `${name()}'s SSN is ${ssn(r)}, date of birth 0${1 + r.int(9)}/1${r.int(9)}/198${r.int(9)}.`,
    () => `Fill in the W-2 form: employee ${name()}, social security number ${ssn(r).replace(/-/g, r.pick(['-', ' ', '']))}.`,
    () => `SSN: ${ssn(r)}`,
  ], 40);
  add('uk_nino', [() => `My National Insurance number is ${nino(r)}.`, () => `NI no. ${nino(r)} — employee ${name()}`, () => `Payroll record: ${name()}, ${nino(r)}`], 25);
  add('ca_sin', [() => `My SIN is ${sin(r)}, can you fill in the T4?`, () => `Social Insurance Number: ${sin(r)} (${name()})`], 20);
  add('in_aadhaar', [() => `Aadhaar: ${aadhaar(r)}`, () => `Here is my Aadhaar number ${aadhaar(r)} for the KYC form.`, () => `UIDAI no ${aadhaar(r)}, name ${name()}`], 20);
  add('passport', [() => `Passport number ${r.chars(UP, 1)}${r.chars(DIG, 8)}, issued to ${name()}.`, () => `passport no: ${r.chars(UP, 2)}${r.chars(DIG, 7)}`], 15);
  add('email', [
    () => `Please send the contract to ${personalEmail(r)} and cc her manager.`,
    () => `${name()} can be reached at ${personalEmail(r)}.`,
    () => `The customer's private address is ${personalEmail(r)}; add it to the CRM.`,
  ], 25, 'detect_pii_email');
  add('phone', [
    () => `Call ${name()} on ${phone(r)} tomorrow morning.`,
    () => `My mobile number is ${phone(r)}.`,
    () => `Emergency contact: ${name()}, ${phone(r)}`,
  ], 25, 'detect_pii_phone');
  return out;
}
