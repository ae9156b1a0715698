/** The joint secret/id scan finds what the two scans find on their own, in the same order, in both modes. */
import { jointScan, JointScan } from '../../../src/governance/firewall/joint-scan';
import { idSpans } from '../../../src/governance/firewall/pii-ids';
import { scanSecrets } from '../../../src/governance/firewall/secret-scan';
import { DETECTORS } from '../../../src/governance/firewall/detectors';

const KEY = 'sk-proj-Ab3dEf9hIj2lMn0pQr5tUv8wXyZ1aB4cD7eF';
const TEXTS = [
  '',
  'the quarterly report, no values at all',
  `Pay to NO93 8601 1117 947, then use ${KEY} and password = "Tr0ub4dor&3x"`,
  // An id right before a secret's literal, an id inside a label's value, a secret inside an id-shaped token.
  `IBAN GB82WEST12345698765432:${KEY} BSN: 111222333 token=GB82WEST12345698765432aB9xQ`,
  `postgres://app:S3cr3t-Pa55w0rd@db:5432/app PESEL 44051401359 ${KEY} 44051401359 NO9386011117947`,
  'ÄÖÜ café — ünïcödé before NO93 8601 1117 947 and after: api_key: "q8Fz2LmN4pR7tVx1"',
];

describe('jointScan', () => {
  it.each(TEXTS.map((t) => [t]))('equals scanSecrets and idSpans on %j', (text) => {
    for (const first of [false, true]) expect(jointScan(text, first)).toEqual({ secrets: scanSecrets(text, first), ids: idSpans(text, first) });
  });

  it('the texts hold what the cases say (a scan finding nothing would make the comparison empty)', () => {
    expect(scanSecrets(TEXTS[4]).length).toBeGreaterThanOrEqual(2);
    expect(idSpans(TEXTS[4]).length).toBeGreaterThanOrEqual(2);
    expect(idSpans(TEXTS[3]).map((s) => s.kind)).toContain('IBAN');
  });

  it('a detector reads a JointScan only for its own text', () => {
    const other = new JointScan(TEXTS[2]);
    expect(other.all().secrets.length).toBeGreaterThan(0);
    expect(other.all().ids.length).toBeGreaterThan(0);
    for (const id of ['sec.formats', 'pii.national_id']) {
      const d = DETECTORS.find((x) => x.id === id)!;
      expect(d.spans(TEXTS[1], other)).toEqual([]);
      expect(d.test(TEXTS[1], other)).toBe(false);
      expect(d.test(TEXTS[2], other)).toBe(true);
    }
  });
});
