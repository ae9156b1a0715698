/**
 * The firewall against an earlier version of itself, in one process, interleaved: inspection of
 * 4 KB windows of the evaluation set's case text (every detector on) and the redact action on a 4 KB
 * prompt (masking plus the check of the masked text), for the working tree and for
 * `src/governance/firewall/` at a git ref (default main), exported to a temporary directory.
 * Rounds alternate old/new; the report gives per-round medians, their median, and the ratio new/old.
 * Run: `npm run bench:units -- --firewall-compare` (BENCH_FIREWALL_REF=<ref> to pick the baseline).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

type Inspect = (texts: string[], opts: object) => unknown;
interface Version {
  name: string;
  inspect: Inspect;
  redact: (text: string) => void;
}

const root = path.join(__dirname, '..', '..');
const opts = { detect_pii_email: true, detect_pii_phone: true };

async function load(name: string, dir: string): Promise<Version> {
  const fw = (await import(path.join(dir, 'index.ts'))) as { inspectText: Inspect; residualCategories: (t: string[], o: object, c: string[], clean?: ReadonlySet<string>) => unknown };
  const rd = (await import(path.join(dir, 'redact.ts'))) as { Redactor: new (c: string[], o: object) => { text(s: string): string; clean?: ReadonlySet<string> } };
  return {
    name,
    inspect: fw.inspectText,
    redact: (text) => {
      // As governance does: the Redactor's clean texts (absent in versions without them) go to the check.
      const r = new rd.Redactor(['secret', 'pii'], opts);
      const masked = r.text(text);
      fw.residualCategories([masked], opts, ['secret', 'pii'], r.clean);
    },
  };
}

function windows(): string[] {
  const dir = path.join(root, 'test', 'fixtures', 'firewall-eval');
  const texts: string[] = [];
  for (const f of fs.readdirSync(dir).filter((x) => x.endsWith('.json')).sort()) texts.push(...(JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as { cases: { text: string }[] }).cases.map((c) => c.text));
  const out: string[] = [];
  let cur = '';
  for (const t of texts) {
    cur += t + '\n';
    while (cur.length >= 4096) {
      out.push(JSON.parse(JSON.stringify(cur.slice(0, 4096))) as string);
      cur = cur.slice(4096);
    }
  }
  return out;
}

const filler = 'The quarterly report covers revenue, churn and the hiring plan for the next two quarters. ';
const values = ' Contact jane.doe@example.org or call +1 415 555 0132; card 4111 1111 1111 1111; key sk-proj-Ab3dEf9hIj2lMn0pQr5tUv8wXyZ1aB4cD7eF. ';
function prompt(withValues: boolean): string {
  let s = '';
  while (s.length < 4096) s += filler + (withValues && s.length % 1000 < 100 ? values : '');
  return JSON.parse(JSON.stringify(s.slice(0, 4096))) as string;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];

function timeEach(items: string[], f: (s: string) => void): number[] {
  return items.map((s) => {
    const t0 = performance.now();
    f(s);
    return performance.now() - t0;
  });
}

export async function run(): Promise<void> {
  const ref = process.env.BENCH_FIREWALL_REF ?? 'main';
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'firewall-ref-'));
  const tar = execFileSync('git', ['-C', root, 'archive', ref, 'src/governance/firewall'], { maxBuffer: 64 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', tmp], { input: tar });
  const versions = [await load(ref, path.join(tmp, 'src/governance/firewall')), await load('working tree', path.join(root, 'src/governance/firewall'))];
  const ws = windows();
  const prompts = [prompt(true), prompt(false)];
  const rounds = 7;
  const res = versions.map(() => ({ p50: [] as number[], p99: [] as number[], mean: [] as number[], redact: [] as number[], redactP99: [] as number[] }));
  for (const v of versions) for (const w of ws.slice(0, 100)) v.inspect([w], opts); // warm-up
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < versions.length; k++) {
      const i = r % 2 === 0 ? k : versions.length - 1 - k; // alternate the order
      const v = versions[i];
      const t = timeEach(ws, (w) => v.inspect([w], opts));
      res[i].p50.push(median(t));
      res[i].p99.push(q(t, 0.99));
      res[i].mean.push(t.reduce((a, b) => a + b, 0) / t.length);
      const rt = timeEach(Array.from({ length: 400 }, (_, j) => prompts[j % 2]), v.redact);
      res[i].redact.push(median(rt));
      res[i].redactP99.push(q(rt, 0.99));
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
  const f = (x: number) => x.toFixed(3);
  console.log(`firewall ${ref} vs working tree, ${ws.length} windows of 4 KB × ${rounds} interleaved rounds; load average ${os.loadavg().map((x) => x.toFixed(2)).join(', ')}`);
  versions.forEach((v, i) => {
    const m = res[i];
    console.log(`  ${v.name.padEnd(14)} inspect 4 KB: p50 ${f(median(m.p50))} ms, mean ${f(median(m.mean))} ms, p99 ${f(median(m.p99))} ms | redact 4 KB prompt: p50 ${f(median(m.redact))} ms, p99 ${f(median(m.redactP99))} ms (medians over rounds)`);
  });
  const ratio = (k: 'p50' | 'mean' | 'p99' | 'redact') => (median(res[1][k]) / median(res[0][k])).toFixed(2);
  console.log(`  ratio new/old: inspect p50 ${ratio('p50')}, mean ${ratio('mean')}, p99 ${ratio('p99')}; redact p50 ${ratio('redact')}`);
}
