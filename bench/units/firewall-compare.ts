/**
 * The firewall against an earlier version of itself, interleaved: inspection of 4 KB windows of the
 * evaluation set's case text (every detector on) and the redact action on a 4 KB prompt (masking
 * plus the check of the masked text), for the working tree and for `src/governance/firewall/` at a
 * git ref (default main), exported to a temporary directory. Each round measures each version in a
 * child process of its own (two copies of the firewall in one process are not measured alike: the
 * copy loaded second ran its redaction ~1.8 times slower than the first with identical code), and
 * rounds alternate which version goes first; the report gives per-round medians, their median, and
 * the ratio new/old.
 * Run: `npm run bench:units -- --firewall-compare` (BENCH_FIREWALL_REF=<ref> to pick the baseline).
 */
import { execFileSync, spawnSync } from 'node:child_process';
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

interface Round {
  p50: number;
  p99: number;
  mean: number;
  redact: number;
  redactP99: number;
}

/** One version measured in this process (a child of run): warm-up, then one round, printed as JSON. */
async function child(dir: string): Promise<void> {
  const v = await load('child', dir);
  const ws = windows();
  const prompts = [prompt(true), prompt(false)];
  for (const w of ws.slice(0, 100)) v.inspect([w], opts); // warm-up
  for (let j = 0; j < 100; j++) v.redact(prompts[j % 2]);
  const t = timeEach(ws, (w) => v.inspect([w], opts));
  const rt = timeEach(Array.from({ length: 400 }, (_, j) => prompts[j % 2]), v.redact);
  const r: Round = { p50: median(t), p99: q(t, 0.99), mean: t.reduce((a, b) => a + b, 0) / t.length, redact: median(rt), redactP99: q(rt, 0.99) };
  process.stdout.write(`${JSON.stringify(r)}\n`);
}

function measureInChild(dir: string): Round {
  const res = spawnSync(process.execPath, [...process.execArgv, process.argv[1], '--firewall-compare'], { env: { ...process.env, BENCH_FIREWALL_CHILD: dir }, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  const line = res.stdout.trim().split('\n').pop() ?? '';
  if (res.status !== 0 || !line.startsWith('{')) throw new Error(`firewall-compare child failed: ${res.stderr.slice(0, 2000)}`);
  return JSON.parse(line) as Round;
}

export async function run(): Promise<void> {
  if (process.env.BENCH_FIREWALL_CHILD) return child(process.env.BENCH_FIREWALL_CHILD);
  const ref = process.env.BENCH_FIREWALL_REF ?? 'main';
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'firewall-ref-'));
  const tar = execFileSync('git', ['-C', root, 'archive', ref, 'src/governance/firewall'], { maxBuffer: 64 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', tmp], { input: tar });
  const versions = [
    { name: ref, dir: path.join(tmp, 'src/governance/firewall') },
    { name: 'working tree', dir: path.join(root, 'src/governance/firewall') },
  ];
  const rounds = 6;
  const res = versions.map(() => ({ p50: [] as number[], p99: [] as number[], mean: [] as number[], redact: [] as number[], redactP99: [] as number[] }));
  try {
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < versions.length; k++) {
        const i = r % 2 === 0 ? k : versions.length - 1 - k; // alternate the order
        const m = measureInChild(versions[i].dir);
        for (const key of ['p50', 'p99', 'mean', 'redact', 'redactP99'] as const) res[i][key].push(m[key]);
      }
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const f = (x: number) => x.toFixed(3);
  console.log(`firewall ${ref} vs working tree, ${windows().length} windows of 4 KB, ${rounds} interleaved rounds (one child process per version and round); load average ${os.loadavg().map((x) => x.toFixed(2)).join(', ')}`);
  versions.forEach((v, i) => {
    const m = res[i];
    console.log(`  ${v.name.padEnd(14)} inspect 4 KB: p50 ${f(median(m.p50))} ms, mean ${f(median(m.mean))} ms, p99 ${f(median(m.p99))} ms | redact 4 KB prompt: p50 ${f(median(m.redact))} ms, p99 ${f(median(m.redactP99))} ms (medians over rounds)`);
  });
  const ratio = (k: 'p50' | 'mean' | 'p99' | 'redact') => (median(res[1][k]) / median(res[0][k])).toFixed(2);
  console.log(`  ratio new/old: inspect p50 ${ratio('p50')}, mean ${ratio('mean')}, p99 ${ratio('p99')}; redact p50 ${ratio('redact')}`);
}
