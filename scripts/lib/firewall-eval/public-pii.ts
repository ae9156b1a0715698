/**
 * Personal data from a public repository, for evaluation only (never tuned on: every case is in
 * the test split): the valid and invalid example numbers in python-stdnum's doctests (LGPL-2.1;
 * numbers collected by its authors from registries and public documentation), each placed in a
 * sentence with the id's usual name. Valid numbers are personal data to catch; invalid ones are
 * ordinary text the checksums must let through.
 */
import { git, gitLs } from '../firewall-snapshots';
import { makeCase, sample, type EvalCase } from './cases';

const REPO = 'arthurdejong+python-stdnum';
/** doctest file → the id's name as a person would write it. */
const MODULES: Record<string, string> = {
  'tests/test_iban.doctest': 'IBAN',
  'tests/test_be_iban.doctest': 'IBAN',
  'tests/test_au_tfn.doctest': 'TFN',
  'tests/test_be_nn.doctest': 'national number',
  'tests/test_ch_ssn.doctest': 'AHV number',
  'tests/test_cl_rut.doctest': 'RUT',
  'tests/test_cn_ric.doctest': 'resident identity card number',
  'tests/test_es_nif.doctest': 'NIF',
  'tests/test_fi_hetu.doctest': 'henkilötunnus',
  'tests/test_it_codicefiscale.doctest': 'codice fiscale',
  'tests/test_no_fodselsnummer.doctest': 'fødselsnummer',
  'tests/test_se_personnummer.doctest': 'personnummer',
  'tests/test_tr_tckimlik.doctest': 'TC Kimlik No',
  'tests/test_za_idnr.doctest': 'ID number',
  'tests/test_nl_bsn.doctest': 'BSN',
  'tests/test_pl_pesel.doctest': 'PESEL',
  'tests/test_br_cpf.doctest': 'CPF',
  'tests/test_gb_nhs.doctest': 'NHS number',
};

/** The `numbers = '''…'''` blocks of a doctest, each with whether the test after it asserts them valid. */
function blocks(src: string): { valid: boolean; numbers: string[] }[] {
  const out: { valid: boolean; numbers: string[] }[] = [];
  const lines = src.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!/^>>> numbers = '''/.test(lines[i])) continue;
    const numbers: string[] = [];
    while (++i < lines.length && !/^\.\.\. '''/.test(lines[i])) {
      const v = lines[i].replace(/^\.\.\. ?/, '').trim();
      if (v) numbers.push(v);
    }
    const test = lines.slice(i + 1, i + 4).find((l) => /is_valid\(x\)/.test(l));
    if (test) out.push({ valid: /if x and not /.test(test), numbers });
  }
  return out;
}

const VALID_CONTEXTS = [(l: string, v: string) => `My ${l} is ${v}.`, (l: string, v: string) => `Please update the record: ${l} ${v}, effective today.`];

export function publicPii(): EvalCase[] {
  const out: EvalCase[] = [];
  const files = new Set(gitLs(REPO, 'tests'));
  for (const [file, label] of Object.entries(MODULES)) {
    if (!files.has(file)) continue;
    const src = git(REPO, file) ?? '';
    for (const b of blocks(src)) {
      const picked = sample(b.numbers, b.valid ? 20 : 6, (v) => `${file}\n${v}`);
      for (const v of picked) {
        const text = b.valid ? VALID_CONTEXTS[v.length % 2](label, v) : `Is ${v} a valid ${label}?`;
        out.push({ ...makeCase(b.valid ? 'pii' : 'benign', b.valid ? 'stdnum-examples' : 'stdnum-invalid', text, { kind: file.replace(/^tests\/test_|\.doctest$/g, '') }), split: 'test' });
      }
    }
  }
  return out;
}
