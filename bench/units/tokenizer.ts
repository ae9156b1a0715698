/**
 * Token estimator benchmark (not a test): `npm run bench:units -- --tokenizer`.
 *
 * Times `countTokens` (src/pricing/tokenizer.ts) on:
 *   1. a 1 KB ordinary prompt (prose + code + JSON), mean µs per call after warm-up — the per-request
 *      cost; and a 1 KB prompt of never-seen words (every piece a memo miss);
 *   2. runs without word breaks: 10,000 and 100,000 repeated 'a', 100,000 spaces / 'A' / CJK chars;
 *   3. 100 KB of random base64, first call (cold memo) and warm.
 * With BENCH_JS_TIKTOKEN=1 it also times js-tiktoken's encoder on the 1 KB prompt and on 2,000 / 5,000
 * repeated 'a' (it is quadratic: 10,000 take ~7 s), and checks the counts agree.
 *
 * With BENCH_COMPARE_DIR=<dir> (a directory where the maintained libraries were installed, outside
 * the project: `npm install --prefix <dir> gpt-tokenizer tiktoken ai-tokenizer`) it measures each of
 * them next to ours on the same inputs — the 1 KB prompt, 1 MB without word breaks, 1 MB of CJK —
 * for time, whether the count equals ours (ours equals tiktoken's `encode_ordinary`), and the memory
 * its process holds once loaded and warm (each library in a child process of its own). A run
 * without word breaks (and the CJK) is doubled from 10,000 characters until 1 MB or until one run
 * takes > 5 s: the time per character, step over step, stays ~1 for a linear library and doubles
 * for a quadratic one.
 *
 * Targets: 1 KB prompt ≤ 50 µs warm; 100,000 'a' ≤ 50 ms.
 */
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import os from 'node:os';
import { countTokens, encodeTokens, EXACT_COUNT_MAX_CHARS, truncateToTokens } from '../../src/pricing/tokenizer';

const log = (m: string) => process.stdout.write(`${m}\n`);

/**
 * Wall-clock ms of one call of `f`, the best of `rounds` (the minimum is the figure least disturbed by
 * other load on the machine), with the value of the last call.
 */
function bestMs<T>(f: () => T, rounds = 5): { ms: number; value: T } {
  let best = Infinity;
  let value!: T;
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    value = f();
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return { ms: best, value };
}

/** Mean µs per call over `calls` calls after `warm` untimed ones; the best of `rounds` such means. */
function meanMicros(f: () => unknown, calls: number, warm = Math.min(calls, 2000), rounds = 5): number {
  for (let i = 0; i < warm; i++) f();
  let best = Infinity;
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) f();
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e3 / calls);
  }
  return best;
}

const PROMPT_SOURCE =
  'You are a careful assistant. Summarise the following support ticket in three bullet points, ' +
  "then propose a reply. The customer's order #48213 arrived late (12 days instead of 5) and the " +
  "box was damaged; they'd like a refund of $37.50 or a replacement.\n\n" +
  'function refund(order, amount) {\n  if (amount > order.total) throw new Error("too much");\n  return api.post(`/orders/${order.id}/refunds`, { amount });\n}\n\n' +
  '{"ticket_id": "T-2291", "priority": "high", "tags": ["shipping", "damaged"], "created_at": "2025-03-14T09:26:53Z"}\n';

function oneKb(source: string): string {
  let s = '';
  while (s.length < 1024) s += source;
  return s.slice(0, 1024);
}

function randomWords(bytes: number, seed: number): string {
  let x = seed >>> 0 || 1;
  const rnd = () => ((x = (x * 1103515245 + 12345) >>> 0) >>> 8) / (1 << 24);
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  let s = '';
  while (s.length < bytes) {
    const len = 3 + Math.floor(rnd() * 8);
    let w = '';
    for (let i = 0; i < len; i++) w += letters[Math.floor(rnd() * 26)];
    s += (rnd() < 0.1 ? ', ' : ' ') + w;
  }
  return s.slice(0, bytes);
}

function measure(): void {
  log(`node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} (figures are the best of several runs)`);
  const t0 = process.hrtime.bigint();
  countTokens('warm up');
  log(`first call (loads the o200k ranks): ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(0)} ms`);

  const prompt = oneKb(PROMPT_SOURCE);
  log(`1 KB ordinary prompt (${countTokens(prompt)} tokens), warm: ${meanMicros(() => countTokens(prompt), 20_000).toFixed(1)} µs/call`);

  // Fresh words every call: each piece misses the memo (worst case for ordinary-looking text).
  const fresh = Array.from({ length: 5 * 2000 }, (_, i) => randomWords(1024, i + 1));
  let k = 0;
  log(`1 KB of never-seen words: ${meanMicros(() => countTokens(fresh[k++]), 2000, 0).toFixed(1)} µs/call`);

  const runs: Array<[string, string]> = [
    ["10,000 × 'a'", 'a'.repeat(10_000)],
    ["100,000 × 'a'", 'a'.repeat(100_000)],
    ["1,000,000 × 'a'", 'a'.repeat(1_000_000)],
    ["100,000 × ' '", ' '.repeat(100_000)],
    ["100,000 × 'A'", 'A'.repeat(100_000)],
    ["100,000 × '!'", '!'.repeat(100_000)],
    ["100,000 × 'ab'", 'ab'.repeat(50_000)],
    ["100,000 × '中'", '中'.repeat(100_000)],
    ['100,000 CJK chars, no punctuation', Array.from({ length: 100_000 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20000))).join('')],
    ["50,000 × '😀'", '😀'.repeat(50_000)],
  ];
  for (const [name, text] of runs) {
    const r = bestMs(() => countTokens(text), text.length > 200_000 ? 3 : 5);
    log(`${name}: ${r.value} tokens, ${r.ms.toFixed(1)} ms`);
  }

  // 100 KB of random base64: pieces are random, so the first call misses the memo on nearly all.
  const samples = Array.from({ length: 5 }, () => randomBytes(75 * 1024).toString('base64'));
  let cold = Infinity;
  for (const s of samples) cold = Math.min(cold, bestMs(() => countTokens(s), 1).ms);
  const warm = bestMs(() => countTokens(samples[0]), 5);
  log(`100 KB random base64: ${warm.value} tokens, first call ${cold.toFixed(1)} ms, warm ${warm.ms.toFixed(1)} ms`);

  const longRun = 'a'.repeat(100_000);
  log(`truncateToTokens(100,000 × 'a', 10,000): ${bestMs(() => truncateToTokens(longRun, 10_000)).ms.toFixed(1)} ms`);
  log(`truncateToTokens(1 KB prompt, 100): ${meanMicros(() => truncateToTokens(prompt, 100), 20_000).toFixed(1)} µs/call`);

  if (process.env.BENCH_JS_TIKTOKEN === '1') {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { Tiktoken } = require('js-tiktoken/lite');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require('js-tiktoken/ranks/o200k_base');
    const enc = new Tiktoken(mod.default ?? mod);
    const exact = (s: string): number => enc.encode(s, [], []).length;
    log(`js-tiktoken, 1 KB ordinary prompt: ${meanMicros(() => exact(prompt), 2_000, 500, 3).toFixed(1)} µs/call`);
    for (const n of [2_000, 5_000]) {
      const s = 'a'.repeat(n);
      const r = bestMs(() => exact(s), 1);
      log(`js-tiktoken, ${n} × 'a': ${r.ms.toFixed(0)} ms (${r.value} tokens; ours ${countTokens(s)})`);
    }
  }
}

type Counter = (text: string) => number;

/** The libraries compared, each counting without special-token handling (special-token text is text, as ours). */
function counters(dir: string): Record<string, () => Counter> {
  const req = createRequire(path.join(path.resolve(dir), 'noop.js'));
  return {
    // Exact at every length: countTokens bounds texts above EXACT_COUNT_MAX_CHARS by their byte length.
    ours: () => (t) => (t.length > EXACT_COUNT_MAX_CHARS ? encodeTokens(t).length : countTokens(t)),
    'gpt-tokenizer': () => {
      const { countTokens: count } = req('gpt-tokenizer/cjs/encoding/o200k_base');
      const none = { allowedSpecial: new Set<string>(), disallowedSpecial: new Set<string>() };
      return (t) => count(t, none);
    },
    'tiktoken (WASM)': () => {
      const { get_encoding: getEncoding } = req('tiktoken');
      const enc = getEncoding('o200k_base');
      return (t) => enc.encode_ordinary(t).length;
    },
    'ai-tokenizer': () => {
      const Tokenizer = req('ai-tokenizer').default;
      const o200k = req('ai-tokenizer/encoding/o200k_base');
      const tok = new Tokenizer(o200k.default ?? o200k);
      return (t) => tok.encode(t, [], []).length;
    },
  };
}

const MB = 1024 * 1024;
/** Time budget of one run: a library past it is not given the next doubling (it would take minutes to hours). */
const RUN_BUDGET_MS = 5_000;

interface Step {
  n: number;
  ms: number;
  tokens: number;
}

/** `count` on texts of n = 10,000, 20,000, … characters up to `max`, stopping after a run over the budget. */
function doubling(count: Counter, make: (n: number) => string, max: number): Step[] {
  const steps: Step[] = [];
  for (let n = 10_000; ; n = Math.min(max, n * 2)) {
    const text = make(n);
    // One call: a library that memoizes pieces would answer a repeat from its cache.
    const r = bestMs(() => count(text), 1);
    steps.push({ n, ms: r.ms, tokens: r.value });
    if (n === max || r.ms > RUN_BUDGET_MS) return steps;
  }
}

const cjk = (n: number) => Array.from({ length: n }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20000))).join('');

/** One library in this process: load, warm, 1 KB, 1 MB without word breaks, 1 MB of CJK; then memory. Prints one JSON line. */
function measureOne(dir: string, name: string): void {
  const before = process.memoryUsage();
  const t0 = process.hrtime.bigint();
  const count = counters(dir)[name]();
  count('warm up');
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const prompt = oneKb(PROMPT_SOURCE);
  const promptUs = meanMicros(() => count(prompt), 5_000, 1_000, 3);
  const run = doubling(count, (n) => 'a'.repeat(n), MB);
  const han = doubling(count, cjk, Math.floor(MB / 3)); // 3 UTF-8 bytes a character: 1 MB
  global.gc?.();
  const after = process.memoryUsage();
  process.stdout.write(`${JSON.stringify({
    name, loadMs, promptUs, promptTokens: count(prompt), run, han,
    rssMb: (after.rss - before.rss) / MB, heapMb: (after.heapUsed - before.heapUsed) / MB, externalMb: (after.external + after.arrayBuffers - before.external - before.arrayBuffers) / MB,
  })}\n`);
}

interface Measured {
  name: string;
  loadMs: number;
  promptUs: number;
  promptTokens: number;
  run: Step[];
  han: Step[];
  rssMb: number;
  heapMb: number;
  externalMb: number;
}

function describeSteps(steps: Step[], what: string, max: number): string {
  const last = steps.at(-1)!;
  const growth = steps.slice(1).map((x, i) => (x.ms / Math.max(0.05, steps[i].ms) / (x.n / steps[i].n)).toFixed(1)).join(' ');
  const reached = last.n === max ? `${what} ${last.ms.toFixed(0)} ms` : `${what}: stopped at ${last.n.toLocaleString('en')} chars, ${last.ms.toFixed(0)} ms`;
  return `${reached} (time per char, relative to the step before: ${growth})`;
}

function compare(dir: string): void {
  log(`\nside by side (BENCH_COMPARE_DIR=${dir}; each library in its own process; memory = growth of the process once loaded and warm):`);
  const results = Object.keys(counters(dir)).map((name) => {
    // The entry point again (bench/units.ts), in this mode, measuring one library.
    const out = execFileSync(process.execPath, [...process.execArgv, '--expose-gc', process.argv[1], '--tokenizer', '--one', name], { env: { ...process.env, BENCH_COMPARE_DIR: dir }, encoding: 'utf8', maxBuffer: 16 * MB });
    return JSON.parse(out.trim().split('\n').at(-1)!) as Measured;
  });
  const ours = results[0];
  const same = (a: Step[], b: Step[]) => a.every((x) => b.find((o) => o.n === x.n)?.tokens === x.tokens);
  for (const r of results) {
    const exact = r.promptTokens === ours.promptTokens && same(r.run, ours.run) && same(r.han, ours.han);
    log(`${r.name}: load ${r.loadMs.toFixed(0)} ms; 1 KB prompt ${r.promptUs.toFixed(1)} µs (${r.promptTokens} tokens); ` +
      `${describeSteps(r.run, "1 MB of 'a'", MB)}; ${describeSteps(r.han, '1 MB of CJK', Math.floor(MB / 3))}; ` +
      `counts ${exact ? 'equal ours' : 'DIFFER from ours'}; memory +${r.rssMb.toFixed(0)} MB RSS (heap +${r.heapMb.toFixed(0)} MB, external +${r.externalMb.toFixed(0)} MB)`);
  }
}

/** `--one <library>`: the child process `compare` starts for each library. */
export async function run(args: string[]): Promise<void> {
  if (args[0] === '--one') return measureOne(process.env.BENCH_COMPARE_DIR!, args[1]);
  measure();
  if (process.env.BENCH_COMPARE_DIR) compare(process.env.BENCH_COMPARE_DIR);
}
