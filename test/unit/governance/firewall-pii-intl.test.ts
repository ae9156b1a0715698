/** IBANs of every registry country, national ids with check digits, dates of birth and addresses in context. */
import { idSpans } from '../../../src/governance/firewall/pii-ids';
import { contextSpans } from '../../../src/governance/firewall/pii-context';
import * as C from '../../../src/governance/firewall/pii-checks';
import { Redactor } from '../../../src/governance/firewall/redact';

const kinds = (t: string) => idSpans(t).map((s) => s.kind);
const ctx = (t: string) => contextSpans(t).map((s) => s.kind);

describe('check digits', () => {
  it('accept registry and published examples, reject one digit off', () => {
    expect(C.ibanValid('NO9386011117947')).toBe(true);
    expect(C.ibanValid('NO9386011117948')).toBe(false);
    expect(C.ibanValid('MT84MALT011000012345MTLCAST001S')).toBe(true);
    expect(C.esDniValid('12345678Z')).toBe(true);
    expect(C.esDniValid('12345678A')).toBe(false);
    expect(C.esDniValid('X1234567L')).toBe(true);
    expect(C.itFiscalValid('RSSMRA85T10A562S')).toBe(true);
    expect(C.itFiscalValid('RSSMRA85T10A562T')).toBe(false);
    expect(C.brCpfValid('52998224725')).toBe(true);
    expect(C.brCpfValid('52998224724')).toBe(false);
    expect(C.nlBsnValid('111222333')).toBe(true);
    expect(C.nlBsnValid('111222334')).toBe(false);
    expect(C.plPeselValid('44051401359')).toBe(true);
    expect(C.plPeselValid('44051401358')).toBe(false);
    expect(C.cnIdValid('11010519491231002X')).toBe(true);
    expect(C.cnIdValid('110105194912310021')).toBe(false);
    expect(C.fiHetuValid('131052-308T')).toBe(true);
    expect(C.fiHetuValid('131052-308U')).toBe(false);
    expect(C.chAhvValid('7569217076985')).toBe(true);
    expect(C.chAhvValid('7569217076984')).toBe(false);
    expect(C.sgNricValid('S1234567D')).toBe(true);
    expect(C.sgNricValid('S1234567E')).toBe(false);
    expect(C.trTcValid('10000000146')).toBe(true);
    expect(C.trTcValid('10000000147')).toBe(false);
    expect(C.nhsValid('9434765919')).toBe(true);
    expect(C.nhsValid('9434765918')).toBe(false);
    expect(C.clRutValid('76086428', '5')).toBe(true);
    expect(C.clRutValid('76086428', '4')).toBe(false);
  });
});

describe('IBAN and national id scan', () => {
  it('finds IBANs of any registry country, compact or in groups of four', () => {
    expect(kinds('Pay to NO93 8601 1117 947 please')).toEqual(['IBAN']);
    expect(kinds('IBAN: MT84MALT011000012345MTLCAST001S')).toEqual(['IBAN']);
    expect(kinds('Pay to NO93 8601 1117 948 please')).toEqual([]);
    expect(kinds('code XX12 3456 7890 1234')).toEqual([]);
  });

  it('finds ids with a distinctive shape and a strong check on their own', () => {
    expect(kinds('CPF 529.982.247-25')).toEqual(['NATIONAL_ID']);
    expect(kinds('cf RSSMRA85T10A562S ok')).toEqual(['NATIONAL_ID']);
    expect(kinds('mine: 11010519491231002X')).toEqual(['NATIONAL_ID']);
    expect(kinds('DNI 12345678Z')).toEqual(['NATIONAL_ID']);
    expect(kinds('hetu 131052-308T')).toEqual(['NATIONAL_ID']);
    expect(kinds('AHV 756.9217.0769.85')).toEqual(['NATIONAL_ID']);
    expect(kinds('RUT 76.086.428-5')).toEqual(['NATIONAL_ID']);
    expect(kinds('CPF 529.982.247-24')).toEqual([]);
  });

  it('counts ids with a weak check only next to their label', () => {
    expect(kinds('My PESEL is 44051401359.')).toEqual(['NATIONAL_ID']);
    expect(kinds('Order 44051401359 shipped.')).toEqual([]);
    expect(kinds('BSN: 111222333')).toEqual(['NATIONAL_ID']);
    expect(kinds('BSN: 111222334')).toEqual([]);
    expect(kinds('NHS number 943 476 5919')).toEqual(['NATIONAL_ID']);
    expect(kinds('CVE ID\nCVE-2023-36281')).toEqual([]);
  });

  it('masks the id, keeps the label', () => {
    expect(new Redactor(['pii'], {}).text('My PESEL is 44051401359.')).toBe('My PESEL is [REDACTED_NATIONAL_ID_1].');
  });
});

describe('dates of birth and addresses in context', () => {
  it('a date of birth next to a name', () => {
    expect(ctx('Jane Smith, born 4 March 1985, applied.')).toEqual(['DATE_OF_BIRTH']);
    expect(ctx('Name: Jan de Vries; DOB: 1969-08-17')).toEqual(['DATE_OF_BIRTH']);
    expect(ctx('The treaty was signed on 4 March 1985.')).toEqual([]);
    expect(ctx('The branch was born 4 March 1985 out of a fork.')).toEqual([]);
  });

  it('an address after a personal cue, not a place in ordinary text', () => {
    expect(ctx('I live at 221 Baker Street, London. Any gyms near me?')).toEqual(['ADDRESS']);
    expect(ctx('Ship to: Lena Fischer, Hauptstraße 153, 33522 Berlin')).toEqual(['ADDRESS']);
    expect(ctx('The museum is at 221 Baker Street, London.')).toEqual([]);
    expect(new Redactor(['pii'], {}).text('My address is 12 Oak Lane, Springfield. Thanks')).toBe('My address is [REDACTED_ADDRESS_1]. Thanks');
  });
});
