/**
 * Synthetic international personal data: IBANs of every registry country, national ids with valid
 * check digits, dates of birth next to names, postal addresses after personal cues; and the hard
 * negatives that must not be flagged (a check digit off by one, a date or an address with no
 * personal cue, ids' shapes in ordinary numbers). Valid values are drawn by rejection sampling
 * against the firewall's own check-digit functions, so this set cannot find an error in those
 * functions: the python-stdnum examples (public-pii.ts) are the independent check.
 */
import * as C from '../../../src/governance/firewall/pii-checks';
import { makeCase, type EvalCase } from './cases';
import { DIG, UP, type Rng } from './rng';

const NAMES = ['Lena Fischer', 'Jan de Vries', 'Katarzyna Wójcik', 'João Silva', 'Wang Fang', 'Ingrid Johansson', 'Mikko Virtanen', 'Chloé Dubois', 'Giulia Russo', 'Pablo Fernández', 'Tan Wei Ming', 'Ayşe Yılmaz', 'Sipho Ndlovu', 'Noa Levi', 'Oliver Smith', 'Jack Wilson'];

/** A value from `gen` that passes `valid` (or, with `invalid`, that fails it). */
function draw(gen: () => string, valid: (s: string) => boolean, invalid = false): string {
  for (;;) {
    const s = gen();
    if (valid(s) !== invalid) return s;
  }
}
const date6 = (r: Rng) => `${String(1 + r.int(28)).padStart(2, '0')}${String(1 + r.int(12)).padStart(2, '0')}${r.chars(DIG, 2)}`;
const ymd6 = (r: Rng) => `${r.chars(DIG, 2)}${String(1 + r.int(12)).padStart(2, '0')}${String(1 + r.int(28)).padStart(2, '0')}`;

interface IdKind {
  kind: string;
  label: string;
  gen: (r: Rng) => string;
  valid: (s: string) => boolean;
  show: (s: string) => string;
}
const ID_KINDS: IdKind[] = [
  { kind: 'es_dni', label: 'DNI', gen: (r) => r.chars(DIG, 8) + r.chars(UP, 1), valid: C.esDniValid, show: (s) => s },
  { kind: 'es_nie', label: 'NIE', gen: (r) => r.pick(['X', 'Y', 'Z']) + r.chars(DIG, 7) + r.chars(UP, 1), valid: C.esDniValid, show: (s) => s },
  { kind: 'it_cf', label: 'codice fiscale', gen: (r) => r.chars(UP, 6) + r.chars(DIG, 2) + r.pick([...'ABCDEHLMPRST']) + r.chars(DIG, 2) + r.chars(UP, 1) + r.chars(DIG, 3) + r.chars(UP, 1), valid: C.itFiscalValid, show: (s) => s },
  { kind: 'fr_nir', label: 'numéro de sécurité sociale', gen: (r) => r.pick(['1', '2']) + r.chars(DIG, 2) + String(1 + r.int(12)).padStart(2, '0') + r.chars(DIG, 8) + r.chars(DIG, 2), valid: C.frNirValid, show: (s) => `${s[0]} ${s.slice(1, 3)} ${s.slice(3, 5)} ${s.slice(5, 7)} ${s.slice(7, 10)} ${s.slice(10, 13)} ${s.slice(13)}` },
  { kind: 'nl_bsn', label: 'BSN', gen: (r) => r.chars(DIG, 9), valid: C.nlBsnValid, show: (s) => s },
  { kind: 'pl_pesel', label: 'PESEL', gen: (r) => ymd6(r) + r.chars(DIG, 5), valid: C.plPeselValid, show: (s) => s },
  { kind: 'br_cpf', label: 'CPF', gen: (r) => r.chars(DIG, 11), valid: C.brCpfValid, show: (s) => `${s.slice(0, 3)}.${s.slice(3, 6)}.${s.slice(6, 9)}-${s.slice(9)}` },
  { kind: 'cn_id', label: '身份证', gen: (r) => r.chars(DIG, 6) + `19${r.chars(DIG, 2)}` + String(1 + r.int(12)).padStart(2, '0') + String(1 + r.int(28)).padStart(2, '0') + r.chars(DIG, 3) + r.pick([...'0123456789X']), valid: C.cnIdValid, show: (s) => s },
  { kind: 'se_pnr', label: 'personnummer', gen: (r) => ymd6(r) + r.chars(DIG, 4), valid: C.sePersonnummerValid, show: (s) => `${s.slice(0, 6)}-${s.slice(6)}` },
  { kind: 'fi_hetu', label: 'henkilötunnus', gen: (r) => `${date6(r)}-${r.chars(DIG, 3)}${r.pick([...'0123456789ABCDEFHJKLMNPRSTUVWXY'])}`, valid: C.fiHetuValid, show: (s) => s },
  { kind: 'no_fnr', label: 'fødselsnummer', gen: (r) => date6(r) + r.chars(DIG, 5), valid: C.noFnrValid, show: (s) => s },
  { kind: 'ch_ahv', label: 'AHV', gen: (r) => '756' + r.chars(DIG, 10), valid: C.chAhvValid, show: (s) => `${s.slice(0, 3)}.${s.slice(3, 7)}.${s.slice(7, 11)}.${s.slice(11)}` },
  { kind: 'sg_nric', label: 'NRIC', gen: (r) => r.pick(['S', 'T', 'F', 'G']) + r.chars(DIG, 7) + r.chars(UP, 1), valid: C.sgNricValid, show: (s) => s },
  { kind: 'tr_tc', label: 'TC Kimlik No', gen: (r) => String(1 + r.int(9)) + r.chars(DIG, 10), valid: C.trTcValid, show: (s) => s },
  { kind: 'uk_nhs', label: 'NHS number', gen: (r) => r.chars(DIG, 10), valid: C.nhsValid, show: (s) => `${s.slice(0, 3)} ${s.slice(3, 6)} ${s.slice(6)}` },
  { kind: 'au_tfn', label: 'TFN', gen: (r) => r.chars(DIG, 9), valid: C.auTfnValid, show: (s) => `${s.slice(0, 3)} ${s.slice(3, 6)} ${s.slice(6)}` },
  { kind: 'za_id', label: 'ID number', gen: (r) => ymd6(r) + r.chars(DIG, 7), valid: C.zaIdValid, show: (s) => s },
  { kind: 'be_nrn', label: 'rijksregisternummer', gen: (r) => ymd6(r) + r.chars(DIG, 5), valid: C.beNrnValid, show: (s) => `${s.slice(0, 2)}.${s.slice(2, 4)}.${s.slice(4, 6)}-${s.slice(6, 9)}.${s.slice(9)}` },
];

const ID_CONTEXTS = [
  (k: IdKind, v: string, n: string) => `My ${k.label} is ${v}, can you fill in the form for ${n}?`,
  (k: IdKind, v: string, n: string) => `Employee: ${n}\n${k.label}: ${v}\nStart date: next Monday`,
  (k: IdKind, v: string, n: string) => `Please check the application of ${n} (${k.label} ${v}) before Friday.`,
];

function ibanOf(r: Rng, invalid: boolean): string {
  const cc = r.pick(Object.keys(C.IBAN_LENGTH));
  const len = C.IBAN_LENGTH[cc];
  return draw(() => cc + r.chars(DIG, 2) + r.chars(DIG + (r.next() < 0.3 ? UP : ''), len - 4), C.ibanValid, invalid);
}
const spaced = (s: string) => s.replace(/(.{4})/g, '$1 ').trim();

const MONTHS = ['January', 'March', 'April', 'June', 'August', 'October', 'December'];
const dobDate = (r: Rng) => r.pick([() => `${1 + r.int(28)} ${r.pick(MONTHS)} 19${50 + r.int(49)}`, () => `${r.pick(MONTHS)} ${1 + r.int(28)}, 19${50 + r.int(49)}`, () => `${String(1 + r.int(28)).padStart(2, '0')}/${String(1 + r.int(12)).padStart(2, '0')}/19${50 + r.int(49)}`, () => `19${50 + r.int(49)}-0${1 + r.int(9)}-1${r.int(9)}`])();
const STREETS = ['Baker Street', 'Maple Avenue', 'Hauptstraße', 'rue de Rivoli', 'Calle Mayor', 'Oak Lane', 'Church Road', 'Sunset Boulevard'];
const street = (r: Rng) => {
  const s = r.pick(STREETS);
  return /straße|Calle|rue/.test(s) ? (s.startsWith('Haupt') ? `${s} ${1 + r.int(200)}, ${r.chars(DIG, 5)} Berlin` : `${1 + r.int(200)} ${s}, ${r.chars(DIG, 5)} Paris`) : `${1 + r.int(2000)} ${s}, Springfield`;
};

export function generatedPiiIntl(r: Rng): EvalCase[] {
  const out: EvalCase[] = [];
  const name = () => r.pick(NAMES);
  const pii = (kind: string, text: string) => out.push(makeCase('pii', 'synthetic-pii-intl', text, { kind }));
  const neg = (kind: string, text: string) => out.push(makeCase('benign', 'synthetic-pii-intl-negatives', text, { kind }));
  for (let i = 0; i < 60; i++) {
    const v = ibanOf(r, false);
    pii('iban', r.pick([`Pay the invoice to ${spaced(v)}, account holder ${name()}.`, `IBAN: ${v}`, `My new bank account is ${r.next() < 0.5 ? v : spaced(v)}.`]));
  }
  for (const k of ID_KINDS) {
    for (let i = 0; i < 6; i++) pii(k.kind, r.pick(ID_CONTEXTS)(k, k.show(draw(() => k.gen(r), k.valid)), name()));
    for (let i = 0; i < 2; i++) neg(`${k.kind}_bad_check`, r.pick(ID_CONTEXTS)(k, k.show(draw(() => k.gen(r), k.valid, true)), name()));
  }
  for (let i = 0; i < 30; i++) {
    pii('date_of_birth', r.pick([`${name()}, born ${dobDate(r)}, applied for the role.`, `Patient: ${name()}\nDate of birth: ${dobDate(r)}\nAllergies: none`, `Name: ${name()}; DOB: ${dobDate(r)}`]));
    pii('address', r.pick([`I live at ${street(r)} — can you find a gym near me?`, `My address is ${street(r)}. Please ship it there.`, `Ship to: ${name()}, ${street(r)}`, `My home address: ${street(r)}`]));
  }
  for (let i = 0; i < 20; i++) {
    neg('iban_bad_check', `Is ${spaced(ibanOf(r, true))} a valid IBAN format?`);
    neg('date_no_person', r.pick([`The treaty was signed on ${dobDate(r)}.`, `Release ${1 + r.int(9)}.${r.int(9)} shipped on ${dobDate(r)}, born out of the old branch.`, `Deadline: ${dobDate(r)}. Date of the review to be confirmed.`]));
    neg('address_no_cue', r.pick([`The museum is at ${street(r)}; it opens at 10.`, `Our office moved to ${street(r)}.`, `Write a story set on ${r.pick(STREETS)}.`]));
    neg('numbers', r.pick([`Order ${r.chars(DIG, 11)} shipped in ${1 + r.int(9)} boxes.`, `The population grew from ${r.chars(DIG, 9)} to ${r.chars(DIG, 9)}.`, `Tracking code ${r.chars(UP, 2)}${r.chars(DIG, 9)}${r.chars(UP, 2)}.`]));
  }
  return out;
}
