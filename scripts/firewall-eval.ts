/**
 * `npm run firewall:eval`: the prompt firewall measured on
 * 1. the out-of-sample evaluation set in test/fixtures/firewall-eval/ (built by
 *    scripts/firewall-eval-build.ts), per split (dev, test) and category, with the default settings and
 *    with the e-mail / phone detectors on; plus inspection latency per 4 KB of text;
 * 2. the in-sample corpus test/fixtures/firewall-corpus.json (written together with the rules).
 *
 *   npm run firewall:eval                 # report
 *   npm run firewall:eval -- --misses dev # also list dev misses and false positives (never test: no tuning on test)
 *   npm run firewall:eval -- --split dev  # the dev split only (while developing: test is reported once, at the end)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { inspectText, type InspectableText } from '../src/governance/firewall';
import { evaluateCorpus, CorpusItem } from '../src/governance/firewall/evaluate-corpus';
import type { EvalCase } from './lib/firewall-eval/cases';

const root = path.join(__dirname, '..');
const evalDir = path.join(root, 'test', 'fixtures', 'firewall-eval');
const pct = (n: number, d: number) => (d ? `${((n / d) * 100).toFixed(1).padStart(5)}% (${n}/${d})` : '   n/a');
const out: string[] = [];
const say = (s = '') => out.push(s);

const argMisses = process.argv.indexOf('--misses');
const showMisses = argMisses >= 0 ? process.argv[argMisses + 1] : undefined;
if (showMisses && showMisses !== 'dev') {
  process.stderr.write('only dev misses are listed: the test split is never looked at case by case\n');
  process.exit(2);
}

function load(file: string): EvalCase[] {
  const p = path.join(evalDir, file);
  if (!fs.existsSync(p)) return [];
  return (JSON.parse(fs.readFileSync(p, 'utf8')) as { cases: EvalCase[] }).cases;
}
const argSplit = process.argv.indexOf('--split');
const onlySplit = argSplit >= 0 ? process.argv[argSplit + 1] : undefined;
const generated = load('generated.json');
const pub = load('public.json');
// International personal data (synthetic, and python-stdnum's examples): files of their own, reported as their own sources.
const held = [...generated, ...pub, ...load('generated-pii-intl.json'), ...load('public-pii.json')];
// The unseen public set (reserved repositories, never read while writing the detectors): its own
// "split", reported apart so the held-out figures stay comparable.
const unseen = load('public-unseen.json').map((c) => ({ ...c, split: 'unseen' as const }));
const cases: (Omit<EvalCase, 'split'> & { split: 'dev' | 'test' | 'unseen' })[] = [...held, ...unseen];
const input = (c: Pick<EvalCase, 'role' | 'text'>): InspectableText[] => [c.role && c.role !== 'user' ? { role: c.role, text: c.text } : c.text];

const CATS = ['injection', 'jailbreak', 'secret', 'pii', 'benign'] as const;
/**
 * What the project defaults do with a detection (policy `firewall.actions`): injection and secrets
 * are blocked, personal data is redacted. An ordinary prompt counts as blocked only when a blocking
 * category is detected; one whose personal data is masked goes through and is counted apart.
 */
const DEFAULT_BLOCKING = new Set(['prompt_injection', 'secret']);
const blocked = (r: { categories: readonly string[] }) => r.categories.some((c) => DEFAULT_BLOCKING.has(c));
const expected: Record<string, string> = { injection: 'prompt_injection', jailbreak: 'prompt_injection', secret: 'secret', pii: 'pii' };

type Split = 'dev' | 'test' | 'unseen';
function report(split: Split, toggles: boolean) {
  const opts = toggles ? { detect_pii_email: true, detect_pii_phone: true } : {};
  say(`  ${toggles ? 'e-mail and phone detectors on' : 'default settings (e-mail and phone detectors off)'}`);
  let attacks = 0;
  let caught = 0;
  for (const cat of CATS) {
    const cs = cases.filter((c) => c.split === split && c.category === cat && (toggles || !c.requires));
    let hit = 0;
    let right = 0;
    let redacted = 0;
    const missed: typeof cases = [];
    for (const c of cs) {
      const r = inspectText(input(c), opts);
      const caught = cat === 'benign' ? blocked(r) : r.detected;
      if (caught) {
        hit += 1;
        if (cat === 'benign' || r.categories.includes(expected[cat] as never)) right += 1;
      } else if (cat === 'benign' && r.detected) redacted += 1;
      if ((cat === 'benign') === caught) missed.push(c);
    }
    if (cat !== 'benign') {
      attacks += cs.length;
      caught += hit;
    }
    const label = cat === 'benign' ? 'benign blocked' : cat === 'pii' ? 'pii caught' : `${cat} caught`;
    say(`    ${label.padEnd(20)} ${pct(hit, cs.length)}${cat !== 'benign' ? `   right category ${pct(right, cs.length)}` : `   personal data redacted (let through) ${pct(redacted, cs.length)}`}`);
    if (showMisses === split && missed.length) {
      for (const c of missed) say(`      ${cat === 'benign' ? 'FP  ' : 'MISS'} [${c.source}${c.kind ? `/${c.kind}` : ''}] ${JSON.stringify(c.text.slice(0, 160))}`);
    }
  }
  say(`    ${'all attacks blocked'.padEnd(20)} ${pct(caught, attacks)}`);
}

function bySource(split: Split) {
  const groups = new Map<string, { n: number; hit: number; benign: boolean }>();
  // The unseen set is reported with the default settings (its e-mails hold addresses the e-mail detector would flag).
  const opts = split === 'unseen' ? {} : { detect_pii_email: true, detect_pii_phone: true };
  for (const c of cases.filter((x) => x.split === split)) {
    const k = `${c.category} · ${c.source}`;
    const g = groups.get(k) ?? { n: 0, hit: 0, benign: c.category === 'benign' };
    g.n += 1;
    const r = inspectText(input(c), opts);
    if (c.category === 'benign' ? blocked(r) : r.detected) g.hit += 1;
    groups.set(k, g);
  }
  for (const [k, g] of [...groups].sort()) say(`    ${k.padEnd(52)} ${g.benign ? 'blocked' : 'caught '} ${pct(g.hit, g.n)}`);
}

function latency() {
  // 4 KB windows of real case text (all categories), each inspected with every detector on.
  const texts = held.map((c) => c.text);
  const windows: string[] = [];
  let cur = '';
  for (const t of texts) {
    cur += t + '\n';
    while (Buffer.byteLength(cur) >= 4096) {
      const w = Buffer.from(cur).subarray(0, 4096).toString('utf8');
      windows.push(w);
      cur = cur.slice(w.length);
    }
  }
  if (!windows.length) return;
  const opts = { detect_pii_email: true, detect_pii_phone: true };
  for (const w of windows.slice(0, 50)) inspectText([w], opts); // warm-up
  const times: number[] = [];
  // CPU time of this thread as well: on a shared machine the wall-clock tail is mostly time spent
  // waiting for a core.
  const cpu: number[] = [];
  for (let rep = 0; rep < 3; rep++) {
    for (const w of windows) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      inspectText([w], opts);
      times.push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1000);
    }
  }
  times.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  const q = (p: number, xs = times) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))].toFixed(3);
  say(`inspection latency per 4 KB of text (${windows.length} windows × 3, all detectors on): p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms`);
  say(`  CPU time per 4 KB: p50 ${q(0.5, cpu)} ms, p99 ${q(0.99, cpu)} ms, max ${q(1, cpu)} ms; load average ${os.loadavg().map((l) => l.toFixed(2)).join(', ')}`);
  // The governed path: what inspection adds to one ordinary request (the gateway benchmark's prompt,
  // and a 1 KB chat with a system prompt), mean CPU time over many runs.
  const benchPrompt = ['Summarise the benefits of governed execution in one sentence.'];
  const chat: InspectableText[] = [{ role: 'system', text: 'You are a helpful assistant for Acme. Answer briefly and politely.' }, texts.find((t) => t.length > 900 && t.length < 1100) ?? 'x'.repeat(1000)];
  for (const [name, req] of [['gateway benchmark request (64 characters)', benchPrompt], ['1 KB chat with a system prompt', chat]] as const) {
    for (let i = 0; i < 200; i++) inspectText(req as InspectableText[], {});
    const c0 = process.cpuUsage();
    const n = 5000;
    for (let i = 0; i < n; i++) inspectText(req as InspectableText[], {});
    const c = process.cpuUsage(c0);
    say(`  one ${name}: ${(((c.user + c.system) / n)).toFixed(1)} µs CPU per inspection (mean of ${n})`);
  }
  // Large single texts (inspected in a worker thread in production, see docs/firewall.md).
  const large: [string, string][] = [['2,000,000 × "a"', 'a'.repeat(2_000_000)], ['1.7 MB of case text', texts.join('\n').repeat(Math.ceil(1_700_000 / Math.max(1, texts.join('\n').length))).slice(0, 1_700_000)]];
  for (const [name, text] of large) {
    const w: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      inspectText([text], opts);
      w.push(performance.now() - t0);
    }
    say(`  one ${name}: ${Math.min(...w).toFixed(0)} ms (best of 3)`);
  }
}

if (cases.length) {
  const count = (split: string, cat: string) => cases.filter((c) => c.split === split && c.category === cat).length;
  say('Out-of-sample evaluation set: test/fixtures/firewall-eval/ (see SOURCES.md)');
  say(`  generated.json: ${generated.length} cases${pub.length ? `; public.json: ${pub.length} cases` : '; public.json missing (run: npx tsx scripts/firewall-eval-build.ts), synthetic part only'}`);
  const about = { dev: ' (rules tuned and classifier trained on this split: in-sample; cross-validated figures in docs/firewall.md)', test: ' (held out: never trained on; its misses were read by class once, docs/firewall.md)', unseen: ' (public-unseen.json: reserved repositories, never read while writing the detectors)' };
  for (const split of ['dev', 'test', 'unseen'] as const) {
    if (onlySplit && split !== onlySplit) continue;
    if (!count(split, 'benign')) continue;
    say();
    say(`split: ${split}${about[split]} — ${CATS.map((c) => `${c} ${count(split, c)}`).join(', ')}`);
    report(split, false);
    report(split, true);
    say(`  by source (${split === 'unseen' ? 'default settings' : 'detectors on'}):`);
    bySource(split);
  }
  say();
  latency();
  say();
}

const corpusFile = path.join(root, 'test', 'fixtures', 'firewall-corpus.json');
const corpus = JSON.parse(fs.readFileSync(corpusFile, 'utf8')) as { items: CorpusItem[] };
const r = evaluateCorpus(corpus.items);
say(`In-sample corpus: ${path.relative(process.cwd(), corpusFile)} (${r.malicious} malicious/sensitive, ${r.benign} benign; written together with the rules)`);
say(`  detection rate:      ${pct(r.detected, r.malicious)} (right category ${r.detectedWithCategory}/${r.malicious})`);
say(`  false-positive rate: ${pct(r.falsePositives, r.benign)}`);
for (const t of r.missed) say(`  missed: ${JSON.stringify(t.slice(0, 100))}`);
for (const t of r.falselyFlagged) say(`  false positive: ${JSON.stringify(t.slice(0, 100))}`);
process.stdout.write(out.join('\n') + '\n');
