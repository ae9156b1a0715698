/**
 * Gateway overhead against Portkey's gateway (not a test): `npm run bench:gateway`, its default mode.
 *
 * Starts its own stack (bench/lib/stack.ts): a throwaway PostgreSQL database, a Temporal dev
 * server, the provider emulator, Tollgate (API + worker, one process, LOG_LEVEL=info, its log to a file) and Portkey's
 * open-source gateway (`@portkey-ai/gateway`, `--headless`) as child processes, so the load
 * generator (autocannon, in this process) shares the machine with them but not their event loops.
 * The same OpenAI chat completion (small prompt, non-stream) is driven, side by side in one run,
 * on four paths:
 *
 *   emulator     POST {emulator}/openai/v1/chat/completions      the provider call alone (baseline)
 *   portkey      POST {portkey}/v1/chat/completions              x-portkey-provider: openai,
 *                                                                x-portkey-custom-host: {emulator}/openai/v1
 *   tg-exec      POST {tollgate}/v1/executions                   governed execution envelope
 *   tg-proxy     POST {tollgate}/v1/proxy/openai/v1/chat/completions   native body, Tollgate key
 *   tg-intent    POST {tollgate}/v1/executions + X-Svc-Workflow-Id  joined to an intent
 *                                                                (max_calls 10^9: calls taken from
 *                                                                the process's lease)
 *
 * at concurrency 1 and 32 on one project, then the two Tollgate paths at concurrency 32 with each
 * connection on its own project (32 projects), for BENCH_SECONDS each (default 6). Then
 * BENCH_STREAMS (default 50) sequential streams per path, round-robin over the paths (the order
 * shuffled every round, seeded, so no path always follows the same one), timing the
 * first token: the first OpenAI SSE chunk whose delta carries text (the first chunk only names the
 * role, with empty content) / the first `delta` event (executions). Then Tollgate's RSS.
 *
 * The emulator runs at its default latency (0 ms: no `x-emulator-*` header, no prompt marker) on
 * every path. Exits non-zero when any path had errors or non-2xx answers.
 *
 * Env: BENCH_SECONDS, BENCH_STREAMS, BENCH_ROUNDS (default 1: each load run that many times, the
 * paths' order shuffled every round, seeded; a row reports the round with the median req/s and the median
 * of the rounds' ratios to Portkey, which resists a shared machine's drift in speed), BENCH_OUT=<file>
 * (results as JSON), BENCH_CPU_PROF=<dir> (V8 CPU profile of the Tollgate process, written when it exits).
 *
 * CPU per request of each run: the answering process (`cpu ms/req`), every PostgreSQL process
 * (`pg ms/req`) and the Temporal dev server (`temporal`: the intent path's lease Updates; a
 * governed sync call makes no Temporal request, so the other paths show its idle timers only).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { Teardown } from '../lib/children';
import { load, loadWithCpu, type MeasuredRun as Measured, median, pct, type Run, timeToMarker } from '../lib/load';
import { ROOT, rssByMapping, rssMiB, startStack } from '../lib/stack';
import { BENCH_BODIES, benchProjects } from '../lib/workload';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 50);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1));
const log = (m: string) => process.stdout.write(`${m}\n`);

type PathName = 'emulator' | 'portkey' | 'tg-exec' | 'tg-proxy' | 'tg-intent';
const LABEL: Record<PathName, string> = {
  emulator: 'emulator direct',
  portkey: 'portkey',
  'tg-exec': 'tollgate /v1/executions',
  'tg-proxy': 'tollgate /v1/proxy/openai',
  'tg-intent': 'tollgate exec + intent',
};

interface Target {
  url: string;
  body: unknown;
  headers: Record<string, string>;
  streamBody: unknown;
  /** Text that marks the first data / delta event of its stream. */
  /** What marks the first token in the stream's text. */
  marker: RegExp;
}

interface Row {
  group: string;
  path: PathName;
  run: Measured;
  addedP50: number;
  addedP99: number;
  ratioToPortkey: number | null;
}

const loadavg = () => os.loadavg().map((n) => Number(n.toFixed(2)));
const num = (n: number, w = 8, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '—').padStart(w);

async function check(name: string, t: Target): Promise<any> {
  const res = await fetch(t.url, { method: 'POST', headers: { 'content-type': 'application/json', ...t.headers }, body: JSON.stringify(t.body), signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${name}: sanity request answered ${res.status}: ${text.slice(0, 800)}`);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${name}: sanity request answered non-JSON: ${text.slice(0, 800)}`);
  }
}

// An OpenAI chat chunk with text in its delta (not the role-only first chunk, whose content is "").
const FIRST_OPENAI_TOKEN = /"delta":\{[^}]*"content":"[^"]/;
const FIRST_EXECUTION_DELTA = /event: delta/;

export async function run(): Promise<void> {
  const startedAt = new Date().toISOString();
  const loadStart = loadavg();
  const teardown = new Teardown();
  teardown.onSignals();
  let exitCode = 0;
  try {
    log(`load average at start: ${loadStart.join(' ')} (${os.cpus().length} CPUs)`);
    const stack = await startStack({ name: 'gateway', teardown, log, portkey: true, cpuProfDir: process.env.BENCH_CPU_PROF || undefined });
    const idleRss = rssMiB(stack.tollgate.pid);
    log(`tollgate RSS after start, idle: ${idleRss ? `${idleRss.rss.toFixed(0)} MiB` : 'unavailable'}`);
    const { key, spread } = await benchProjects(stack);
    const { openai, governed } = BENCH_BODIES;
    const emulatorBase = `${stack.emulatorUrl}/openai/v1`;
    const targets: Record<PathName, Target> = {
      emulator: { url: `${emulatorBase}/chat/completions`, body: openai, headers: { authorization: 'Bearer bench' }, streamBody: { ...openai, stream: true }, marker: FIRST_OPENAI_TOKEN },
      portkey: {
        url: `${stack.portkeyUrl}/v1/chat/completions`,
        body: openai,
        headers: { authorization: 'Bearer bench', 'x-portkey-provider': 'openai', 'x-portkey-custom-host': emulatorBase },
        streamBody: { ...openai, stream: true },
        marker: FIRST_OPENAI_TOKEN,
      },
      'tg-exec': { url: `${stack.tollgateUrl}/v1/executions`, body: governed, headers: { authorization: `Bearer ${key}` }, streamBody: { ...governed, mode: 'stream' }, marker: FIRST_EXECUTION_DELTA },
      'tg-proxy': { url: `${stack.tollgateUrl}/v1/proxy/openai/v1/chat/completions`, body: openai, headers: { authorization: `Bearer ${key}` }, streamBody: { ...openai, stream: true }, marker: FIRST_OPENAI_TOKEN },
      'tg-intent': {
        url: `${stack.tollgateUrl}/v1/executions`,
        body: governed,
        headers: { authorization: `Bearer ${key}`, 'x-svc-workflow-id': 'bench-intent' },
        streamBody: { ...governed, mode: 'stream' },
        marker: FIRST_EXECUTION_DELTA,
      },
    };
    // The intent the tg-intent path joins (no practical ceiling: every call is allowed).
    const declared = await fetch(`${stack.tollgateUrl}/v1/workflows`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ workflow_id: 'bench-intent', intent: { max_calls: 1_000_000_000 } }),
    });
    if (declared.status !== 201) throw new Error(`declaring the bench intent answered ${declared.status}: ${await declared.text()}`);
    const paths = Object.keys(targets) as PathName[];

    // Every path must answer with the emulator's completion before anything is measured.
    const direct = await check('emulator', targets.emulator);
    const viaPortkey = await check('portkey', targets.portkey);
    const expected = direct?.choices?.[0]?.message?.content;
    if (typeof expected !== 'string' || !expected.startsWith('Emulated reply')) throw new Error(`emulator: unexpected completion ${JSON.stringify(direct).slice(0, 800)}`);
    if (viaPortkey?.object !== 'chat.completion' || viaPortkey?.choices?.[0]?.message?.content !== expected || viaPortkey?.usage?.prompt_tokens !== direct.usage?.prompt_tokens) {
      throw new Error(`portkey did not return the emulator's chat completion.\nexpected content: ${expected}\nportkey answered: ${JSON.stringify(viaPortkey).slice(0, 1200)}`);
    }
    log(`portkey verified: its answer is the emulator's completion (${JSON.stringify(expected.slice(0, 60))}…)`);
    const viaProxy = await check('tg-proxy', targets['tg-proxy']);
    if (viaProxy?.choices?.[0]?.message?.content !== expected) throw new Error(`tollgate proxy did not return the emulator's completion: ${JSON.stringify(viaProxy).slice(0, 1200)}`);
    const viaExec = await check('tg-exec', targets['tg-exec']);
    if (!JSON.stringify(viaExec).includes('Emulated reply')) throw new Error(`tollgate execution did not carry the emulator's completion: ${JSON.stringify(viaExec).slice(0, 1200)}`);
    const viaIntent = await check('tg-intent', targets['tg-intent']);
    if (!JSON.stringify(viaIntent).includes('Emulated reply')) throw new Error(`tollgate execution joined to an intent did not carry the emulator's completion: ${JSON.stringify(viaIntent).slice(0, 1200)}`);

    for (const p of paths) {
      await timeToMarker(targets[p].url, targets[p].streamBody, targets[p].headers, targets[p].marker).catch((err: Error) => {
        throw new Error(`${p}: sanity stream failed: ${err.message}`);
      });
    }

    log('warm-up…');
    for (const p of paths) await load({ ...targets[p], connections: 8, seconds: 3 });
    await load({ ...targets['tg-exec'], headers: {}, perConnection: spread, connections: 32, seconds: 2 });
    await load({ ...targets['tg-proxy'], headers: {}, perConnection: spread, connections: 32, seconds: 2 });

    const rows: Row[] = [];
    const base: Record<number, { emulator: Run; portkey: Run }> = {};
    const add = (group: string, p: PathName, run: Measured, c: number, ratio?: number) => {
      const b = base[c];
      rows.push({ group, path: p, run, addedP50: run.p50 - b.emulator.p50, addedP99: run.p99 - b.emulator.p99, ratioToPortkey: ratio ?? (b.portkey.rps ? run.rps / b.portkey.rps : null) });
    };
    // CPU per request of the gateway process under test and of PostgreSQL, during one run.
    // Tollgate's CPU is its API process's plus its worker's (the intent path's Updates run there).
    const gatewayPids = (p: PathName): number[] =>
      p === 'portkey' ? (stack.portkey ? [stack.portkey.pid] : []) : p === 'emulator' ? [stack.emulator.pid] : [stack.tollgate.pid, ...(stack.worker ? [stack.worker.pid] : [])];
    const measured = (p: PathName, o: Parameters<typeof load>[0]) => loadWithCpu(gatewayPids(p), o, stack.temporalPid);
    // Every load run, for the error check (a row shows one run per path).
    const everyRun: { group: string; path: PathName; run: Measured }[] = [];
    // The run of a path that a row reports: with BENCH_ROUNDS > 1, the round with the median req/s.
    const medianRun = (list: Measured[]): Measured => [...list].sort((a, b) => a.rps - b.rps)[Math.ceil(list.length / 2) - 1];
    for (const c of [1, 32]) {
      const rounds = Object.fromEntries(paths.map((p) => [p, [] as Measured[]])) as Record<PathName, Measured[]>;
      const orders = shuffledOrders(paths, ROUNDS, c);
      for (let r = 0; r < ROUNDS; r++) {
        // Every path once per round, in a new order each round (see the streams below).
        for (const p of orders[r]) {
          log(`  c=${c} ${LABEL[p]}${ROUNDS > 1 ? ` (round ${r + 1} of ${ROUNDS})` : ''}…`);
          rounds[p].push(await measured(p, { ...targets[p], connections: c, seconds: SECONDS }));
          everyRun.push({ group: `c=${c}`, path: p, run: rounds[p][r] });
        }
      }
      base[c] = { emulator: medianRun(rounds.emulator), portkey: medianRun(rounds.portkey) };
      // The ratio to Portkey is taken within each round (the two ran minutes apart at most) and
      // the median of the rounds' ratios reported: drift in the machine's speed cancels out.
      for (const p of paths) add(`c=${c}`, p, medianRun(rounds[p]), c, median(rounds[p].map((run, r) => run.rps / Math.max(1e-9, rounds.portkey[r].rps))));
    }
    for (const p of ['tg-exec', 'tg-proxy'] as const) {
      const list: Measured[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        log(`  c=32, 32 projects ${LABEL[p]}${ROUNDS > 1 ? ` (round ${r + 1} of ${ROUNDS})` : ''}…`);
        list.push(await measured(p, { ...targets[p], headers: {}, perConnection: spread, connections: 32, seconds: SECONDS }));
        everyRun.push({ group: 'c=32, 32 projects', path: p, run: list[r] });
      }
      add('c=32, 32 projects', p, medianRun(list), 32);
    }

    // Sequential streams, round-robin over the paths so drift in machine load hits all alike, in a
    // new order every round: a stream's time depends on what ran just before it (Portkey keeps the
    // CPU busy for a while after its stream ends). Rotating one order kept every path's neighbours
    // (executions always came right after Portkey, 1.2 ms slower than the proxy), so the order is
    // shuffled (seeded, so runs are comparable).
    log(`  ${STREAMS} streams per path…`);
    const ttft = Object.fromEntries(paths.map((p) => [p, [] as number[]])) as Record<PathName, number[]>;
    const streamDeadline = Date.now() + Math.max(120_000, STREAMS * 4 * 2_000);
    const orders = shuffledOrders(paths, STREAMS, 20261126);
    for (let i = 0; i < STREAMS; i++) {
      if (Date.now() > streamDeadline) throw new Error(`streams: gave up after ${i} rounds (time limit)`);
      for (const p of orders[i]) {
        ttft[p].push(await timeToMarker(targets[p].url, targets[p].streamBody, targets[p].headers, targets[p].marker));
      }
    }
    for (const p of paths) ttft[p].sort((a, b) => a - b);

    const rss = rssMiB(stack.tollgate.pid);
    const mappings = rssByMapping(stack.tollgate.pid);
    const workerRss = stack.worker ? rssMiB(stack.worker.pid) : null;
    const portkeyRss = stack.portkey ? rssMiB(stack.portkey.pid) : null;
    const loadEnd = loadavg();

    log('');
    log(`sync chat completion, ${SECONDS} s per run${ROUNDS > 1 ? `, ${ROUNDS} rounds (median)` : ''}, emulator latency 0 ms (default); latency in ms; added = path − emulator direct at the same concurrency`);
    log(`${'concurrency'.padEnd(18)} ${'path'.padEnd(26)} ${'req/s'.padStart(8)} ${'p50'.padStart(8)} ${'p99'.padStart(8)} ${'+p50'.padStart(8)} ${'+p99'.padStart(8)} ${'err/non2xx'.padStart(11)} ${'×portkey'.padStart(9)} ${'cpu ms/req'.padStart(11)} ${'pg ms/req'.padStart(10)} ${'temporal'.padStart(9)}`);
    for (const r of rows) {
      const isBase = r.path === 'emulator';
      log(
        `${r.group.padEnd(18)} ${LABEL[r.path].padEnd(26)} ${num(r.run.rps)} ${num(r.run.p50)} ${num(r.run.p99)} ${isBase ? '       —' : num(r.addedP50)} ${isBase ? '       —' : num(r.addedP99)} ${`${r.run.errors + r.run.timeouts}/${r.run.non2xx}`.padStart(11)} ${r.ratioToPortkey === null ? '—'.padStart(9) : num(r.ratioToPortkey, 9, 2)} ${num(r.run.cpu.gatewayMs, 11, 2)} ${num(r.run.cpu.postgresMs, 10, 2)} ${num(r.run.cpu.temporalMs, 9, 2)}`,
      );
    }
    log('');
    log(`streams: time to the first token (first OpenAI SSE chunk with text / first delta event of an execution), ${STREAMS} sequential streams per path (ms)`);
    log(`${'path'.padEnd(26)} ${'p50'.padStart(8)} ${'p99'.padStart(8)} ${'+p50'.padStart(8)} ${'+p99'.padStart(8)}`);
    const e50 = pct(ttft.emulator, 50);
    const e99 = pct(ttft.emulator, 99);
    const ttftOut: Record<string, { p50: number; p99: number; addedP50: number; addedP99: number; n: number }> = {};
    for (const p of paths) {
      const p50 = pct(ttft[p], 50);
      const p99 = pct(ttft[p], 99);
      ttftOut[p] = { p50, p99, addedP50: p50 - e50, addedP99: p99 - e99, n: ttft[p].length };
      log(`${LABEL[p].padEnd(26)} ${num(p50)} ${num(p99)} ${p === 'emulator' ? '       —' : num(p50 - e50)} ${p === 'emulator' ? '       —' : num(p99 - e99)}`);
    }
    log('');
    const mib = (r: { rss: number; peak: number } | null) => (r ? `${r.rss.toFixed(0)} MiB (peak ${r.peak.toFixed(0)} MiB)` : 'unavailable');
    log(`tollgate RSS after the run: ${stack.worker ? `API process ${mib(rss)}, worker process ${mib(workerRss)}` : `API + worker in one process ${mib(rss)}`}; portkey RSS: ${portkeyRss ? `${portkeyRss.rss.toFixed(0)} MiB (peak ${portkeyRss.peak.toFixed(0)} MiB)` : 'unavailable'}`);
    log(`tollgate resident by mapping (MiB; V8's heap and malloc's arenas are in [anon] and [heap]): ${mappings.slice(0, 5).map((m) => `${m.name} ${m.mib.toFixed(1)}`).join(', ')}`);
    log(`load average: start ${loadStart.join(' ')}, end ${loadEnd.join(' ')} (${os.cpus().length} CPUs)`);

    const failures = everyRun
      .filter((r) => r.run.errors || r.run.timeouts || r.run.non2xx)
      .map((r) => `${r.group} ${LABEL[r.path]}: ${r.run.errors} errors, ${r.run.timeouts} timeouts, ${r.run.non2xx} non-2xx (status codes ${JSON.stringify(r.run.statusCodes)})`);
    if (process.env.BENCH_OUT) {
      const out = {
        startedAt,
        finishedAt: new Date().toISOString(),
        machine: { cpus: os.cpus().length, node: process.version, loadavgStart: loadStart, loadavgEnd: loadEnd },
        config: { seconds: SECONDS, streams: STREAMS, rounds: ROUNDS, emulatorLatencyMs: 0, portkeyVersion: JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules/@portkey-ai/gateway/package.json'), 'utf8')).version as string },
        sync: rows.map((r) => ({ concurrency: r.group, path: r.path, ...r.run, addedP50: r.path === 'emulator' ? null : r.addedP50, addedP99: r.path === 'emulator' ? null : r.addedP99, ratioToPortkey: r.ratioToPortkey })),
        ttft: ttftOut,
        tollgateRssMiB: rss,
        tollgateWorkerRssMiB: workerRss,
        portkeyRssMiB: portkeyRss,
        failures,
      };
      fs.mkdirSync(path.dirname(path.resolve(process.env.BENCH_OUT)), { recursive: true });
      fs.writeFileSync(process.env.BENCH_OUT, `${JSON.stringify(out, null, 2)}\n`);
      log(`results written to ${process.env.BENCH_OUT}`);
    }
    if (failures.length) {
      exitCode = 1;
      log('');
      log('FAILED: errors or non-2xx answers on:');
      for (const f of failures) log(`  ${f}`);
    }
  } catch (err) {
    exitCode = 1;
    console.error(err instanceof Error ? err.stack ?? err.message : err);
  } finally {
    await teardown.run();
  }
  process.exit(exitCode);
}


/** `count` orders of `xs`, each shuffled (fast-check's generator, seeded, so every run shuffles the same way). */
function shuffledOrders<T>(xs: readonly T[], count: number, seed: number): T[][] {
  return fc.sample(fc.shuffledSubarray([...xs], { minLength: xs.length, maxLength: xs.length }), { seed, numRuns: count });
}
