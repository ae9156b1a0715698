/**
 * Token estimator benchmark (not a test): `npx tsx bench/tokenizer.ts`.
 *
 * Times `countTokens` (src/pricing/tokenizer.ts) on:
 *   1. a 1 KB ordinary prompt (prose + code + JSON), mean µs per call after warm-up — the per-request
 *      cost; and a 1 KB prompt of never-seen words (every piece a memo miss);
 *   2. runs without word breaks: 10,000 and 100,000 repeated 'a', 100,000 spaces / 'A' / CJK chars;
 *   3. 100 KB of random base64, first call (cold memo) and warm.
 * With BENCH_BASELINE=1 it also times js-tiktoken's encoder on the 1 KB prompt and on 2,000 / 5,000
 * repeated 'a' (it is quadratic: 10,000 take ~7 s), and checks the counts agree.
 *
 * Targets: 1 KB prompt ≤ 50 µs warm; 100,000 'a' ≤ 50 ms.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { countTokens, truncateToTokens } from '../src/pricing/tokenizer';

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

function main(): void {
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

  if (process.env.BENCH_BASELINE === '1') {
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

main();
