/**
 * Cost of the firewall's `redact` action on a 4 KB prompt: the masking (Redactor.text over the
 * secret and personal-data detectors) plus governance's check of the masked text
 * (residualCategories). Run: `npm run bench:units -- --firewall-redact`.
 */
import { performance } from 'node:perf_hooks';
import { Redactor } from '../../src/governance/firewall/redact';
import { residualCategories } from '../../src/governance/firewall';

const filler = 'The quarterly report covers revenue, churn and the hiring plan for the next two quarters. ';
const values = ' Contact jane.doe@example.org or call +1 415 555 0132; card 4111 1111 1111 1111; key sk-proj-Ab3dEf9hIj2lMn0pQr5tUv8wXyZ1aB4cD7eF. ';
const build = (withValues: boolean) => {
  let s = '';
  while (s.length < 4096) s += filler + (withValues && s.length % 1000 < 100 ? values : '');
  return JSON.parse(JSON.stringify(s.slice(0, 4096))) as string;
};
const opts = { detect_pii_email: true, detect_pii_phone: true };

export async function run(): Promise<void> {
  for (const [name, text] of [['4 KB with values', build(true)], ['4 KB without values', build(false)]] as const) {
    const times: number[] = [];
    for (let i = 0; i < 3000; i++) {
      const t0 = performance.now();
      const r = new Redactor(['secret', 'pii'], opts);
      const masked = r.text(text);
      residualCategories([masked], opts, ['secret', 'pii'], r.clean);
      times.push(performance.now() - t0);
    }
    const warm = times.slice(500).sort((a, b) => a - b);
    const q = (p: number) => warm[Math.min(warm.length - 1, Math.floor(p * warm.length))].toFixed(3);
    console.log(`${name}: p50 ${q(0.5)} ms, p99 ${q(0.99)} ms (masking + check, ${warm.length} warmed-up runs)`);
  }
}
