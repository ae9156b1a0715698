/**
 * `npm run bench:gateway -- --stall`: how long small requests wait while a request carrying the
 * largest accepted prompt (a body just under BODY_LIMIT_BYTES) runs on the same Tollgate process.
 *
 * Starts the bench stack (bench/lib/stack.ts), then, per round and per large path (executions,
 * executions with an Idempotency-Key, the DeepSeek proxy; their order rotated between rounds):
 * small governed executions one after the other with nothing else running (quiet), then the same
 * small requests while one large request runs, from its send to its answer (loaded). The large
 * requests go to DeepSeek, pointed at a sink in this process that drops the body and answers at
 * once; the small ones go to the emulator (a single-threaded process that would otherwise serve
 * them only after parsing the large body: its stall, not Tollgate's). A small request's delay is
 * its latency minus the quiet median of its round. Prints, per path: the delays' p50 and max over
 * all rounds, the median of the rounds' max delays, Tollgate's own event-loop monitor (its longest
 * lag while the large request ran, median of rounds and max; and over the quiet probes, from
 * /metrics) and the large request's duration. Exits non-zero when a delay exceeds
 * BENCH_STALL_BOUND_MS (100). Knobs: BENCH_ROUNDS (5), BENCH_QUIET_PROBES (30),
 * BENCH_CPU_PROF=<dir> (a V8 CPU profile of the Tollgate process, written when it exits).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { pct } from '../lib/load';
import { BENCH_METRICS_TOKEN, startStack } from '../lib/stack';
import { Teardown } from '../lib/children';
import { BENCH_BODIES } from '../lib/workload';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const QUIET_PROBES = Number(process.env.BENCH_QUIET_PROBES ?? 30);
const BOUND_MS = Number(process.env.BENCH_STALL_BOUND_MS ?? 100);
/** The default body limit of the model-input routes (src/config.ts). */
const BODY_LIMIT_BYTES = 10 * 1024 * 1024;
const log = (m: string) => console.error(`[bench:gateway --stall] ${m}`);

/** Ordinary words up to `bytes` (the firewall and the token estimate read all of it). */
function largePrompt(bytes: number): string {
  const words = 'the quarterly report shows steady growth across every region and product line ';
  return words.repeat(Math.floor(bytes / words.length));
}

interface PathResult {
  quiet: number[];
  delays: number[];
  largeMs: number[];
  /** Tollgate's own event-loop monitor: the longest lag while the large request ran, and over the quiet probes. */
  lagMs: number[];
  quietLagMs: number[];
  /** Each round's largest delay. */
  roundMax: number[];
}

/**
 * The longest event-loop lag Tollgate's process saw since the previous scrape (prom-client's
 * monitor, 10 ms resolution, reset by every scrape of /metrics), ms.
 */
async function lagMaxMs(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` } })).text();
  const line = text.split('\n').find((l) => l.startsWith('nodejs_eventloop_lag_max_seconds '));
  return line ? Number(line.split(' ').pop()) * 1000 : NaN;
}

/** An OpenAI-compatible upstream that reads and drops the request body and answers a fixed completion. */
async function startSink(teardown: Teardown): Promise<string> {
  const reply = JSON.stringify({
    id: 'chatcmpl-sink', object: 'chat.completion', created: 0, model: 'deepseek-chat',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Read it all.' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 2_000_000, completion_tokens: 4, total_tokens: 2_000_004 },
  });
  const server = http.createServer((req, res) => {
    req.on('data', () => undefined);
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply) });
      res.end(reply);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  teardown.add('sink', () => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function post(url: string, body: string, headers: Record<string, string>): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 300)}`);
  return performance.now() - t0;
}

export async function run(): Promise<void> {
  const teardown = new Teardown();
  teardown.onSignals();
  try {
    const sink = await startSink(teardown);
    const stack = await startStack({
      name: 'stall', teardown, log,
      env: { DEEPSEEK_BASE_URL: sink, DEEPSEEK_API_KEY: 'bench' },
      ...(process.env.BENCH_CPU_PROF ? { cpuProfDir: process.env.BENCH_CPU_PROF } : {}),
    });
    const { key } = await stack.newProjectKey('stall');
    const auth = { authorization: `Bearer ${key}` };
    const execUrl = `${stack.tollgateUrl}/v1/executions`;
    const small = JSON.stringify(BENCH_BODIES.governed);
    // Within 1 KB of the limit once serialized, as the e2e test sends it.
    const prompt = largePrompt(BODY_LIMIT_BYTES - 1024);
    const execBody = JSON.stringify({ ...BENCH_BODIES.governed, messages: [{ role: 'user', content: prompt }], routing: { provider: 'deepseek', model: 'deepseek-chat' }, parameters: { max_output_tokens: 16 } });
    const large: Record<'executions' | 'executions+key' | 'proxy', { url: string; body: string; idempotent?: boolean }> = {
      executions: { url: execUrl, body: execBody },
      // An Idempotency-Key makes the body's canonical hash part of the request path.
      'executions+key': { url: execUrl, body: execBody, idempotent: true },
      proxy: {
        url: `${stack.tollgateUrl}/v1/proxy/deepseek/chat/completions`,
        body: JSON.stringify({ ...BENCH_BODIES.openai, model: 'deepseek-chat', messages: [{ role: 'user', content: prompt }], max_tokens: 16 }),
      },
    };
    for (const l of Object.values(large)) if (Buffer.byteLength(l.body) > BODY_LIMIT_BYTES) throw new Error('the large body is over the limit');
    log(`large bodies: ${(Buffer.byteLength(large.executions.body) / 2 ** 20).toFixed(2)} MiB`);

    // Warm-up: each path once with a large body, small calls until the latency settles.
    const headersOf = (l: { idempotent?: boolean }) => (l.idempotent ? { ...auth, 'idempotency-key': `stall-${randomUUID()}` } : auth);
    for (const l of Object.values(large)) await post(l.url, l.body, headersOf(l));
    for (let i = 0; i < 50; i++) await post(execUrl, small, auth);

    const empty = (): PathResult => ({ quiet: [], delays: [], largeMs: [], lagMs: [], quietLagMs: [], roundMax: [] });
    const names = Object.keys(large) as (keyof typeof large)[];
    const results = Object.fromEntries(names.map((n) => [n, empty()])) as Record<keyof typeof large, PathResult>;
    for (let round = 0; round < ROUNDS; round++) {
      // Each path runs first, in the middle and last in turn.
      const order = names.map((_, i) => names[(i + round) % names.length]);
      for (const name of order) {
        const quiet: number[] = [];
        await lagMaxMs(stack.tollgateUrl);
        for (let i = 0; i < QUIET_PROBES; i++) quiet.push(await post(execUrl, small, auth));
        const quietLag = await lagMaxMs(stack.tollgateUrl);
        const quietP50 = pct([...quiet].sort((a, b) => a - b), 50);
        let done = false;
        const t0 = performance.now();
        const big = post(large[name].url, large[name].body, headersOf(large[name])).finally(() => (done = true));
        const loaded: number[] = [];
        while (!done) loaded.push(await post(execUrl, small, auth));
        await big;
        const largeMs = performance.now() - t0;
        const lag = await lagMaxMs(stack.tollgateUrl);
        const r = results[name];
        r.lagMs.push(lag);
        r.quietLagMs.push(quietLag);
        r.quiet.push(...quiet);
        const delays = loaded.map((ms) => Math.max(0, ms - quietP50));
        r.delays.push(...delays);
        r.roundMax.push(Math.max(0, ...delays));
        r.largeMs.push(largeMs);
        log(`round ${round + 1} ${name}: large ${largeMs.toFixed(0)} ms, ${loaded.length} small calls beside it, max delay ${Math.max(0, ...loaded.map((ms) => ms - quietP50)).toFixed(1)} ms (quiet p50 ${quietP50.toFixed(1)} ms); event-loop lag max ${lag.toFixed(0)} ms (quiet ${quietLag.toFixed(0)})`);
      }
    }

    const f = (v: number) => v.toFixed(1).padStart(8);
    const med = (xs: number[]) => pct([...xs].sort((a, b) => a - b), 50);
    console.log(`small calls beside the largest accepted prompt, ms (${ROUNDS} rounds; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})`);
    console.log('large path       quiet p50   delay p50   delay max   rounds\' max (median)   loop lag (median / max)   quiet lag max   large p50   small calls');
    let over = false;
    for (const [name, r] of Object.entries(results)) {
      const d = [...r.delays].sort((a, b) => a - b);
      const max = d.length ? d[d.length - 1] : NaN;
      if (!(max <= BOUND_MS)) over = true;
      console.log(
        `${name.padEnd(14)} ${f(med(r.quiet))}    ${f(pct(d, 50))}    ${f(max)}         ${f(med(r.roundMax))}        ${f(med(r.lagMs))} / ${f(Math.max(...r.lagMs))}     ${f(Math.max(...r.quietLagMs))}    ${f(med(r.largeMs))}    ${String(d.length).padStart(10)}`,
      );
    }
    console.log(`bound: every small call's delay ≤ ${BOUND_MS} ms: ${over ? 'MISSED' : 'met'}`);
    if (over) process.exitCode = 1;
  } finally {
    await teardown.run();
  }
}
