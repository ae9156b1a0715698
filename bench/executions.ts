/**
 * Governed-execution overhead benchmark (not a test): `npm run bench:executions`.
 *
 * Starts its own Temporal dev server and a throwaway PostgreSQL database, the provider emulator
 * and Tollgate (API + worker, one process) as child processes, so the load generator (autocannon,
 * in this process) competes with neither. Then, side by side in one run:
 *
 *   direct   — POST {emulator}/openai/v1/chat/completions (the provider call alone)
 *   tollgate — POST {tollgate}/v1/executions with the same prompt (governance, permit, dispatch,
 *              usage, events, through Temporal)
 *
 * at concurrency 1 and 32, for BENCH_SECONDS each (default 10), printing throughput, p50/p99 and
 * the added latency (tollgate − direct). Governance and the event hash chain serialise per project
 * by design, so c=32 runs twice: every request on one hot project, and each connection on its own
 * project (32 projects, one API key each). Then TTFT for streams: BENCH_STREAMS sequential streams
 * (default 50) direct vs through Tollgate, time to the first content delta.
 *
 * Targets (2-core machine): added p50 ≤ 15 ms and p99 ≤ 40 ms at c=32, ≥ 150 executions/s, no errors.
 */
import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon: (opts: Record<string, unknown>) => Promise<any> = require('autocannon');
import { ensureTemporalCli } from '../scripts/lib/temporal-cli';
import { createDatabaseIfMissing, dropDatabase, ensurePostgres, withDatabase } from '../scripts/lib/postgres';
import { freePort, startTemporalDevServer } from '../scripts/lib/temporal-dev-server';
import { migrate } from '../src/db/migrate';
import { createPool } from '../src/db/pool';
import { createProject } from '../src/db/repositories/projects';
import { createApiKey } from '../src/db/repositories/api-keys';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 50);
const ROOT = path.resolve(__dirname, '..');
const log = (m: string) => process.stdout.write(`${m}\n`);

function child(name: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const onData = (d: Buffer) => {
      out += String(d);
      if (ready.test(out)) resolve(p);
    };
    p.stdout!.on('data', onData);
    p.stderr!.on('data', onData);
    p.once('exit', (code) => reject(new Error(`${name} exited ${code}: ${out.slice(-2000)}`)));
  });
}

async function waitHttp(url: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const r = await fetch(url);
      if (r.status < 500) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`${url} did not come up`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface Run {
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  errors: number;
  non2xx: number;
  total: number;
}

/** `perConnection`: headers of connection i are perConnection[i % length] (e.g. one project each). */
async function load(url: string, body: unknown, headers: Record<string, string>, connections: number, seconds = SECONDS, perConnection?: Record<string, string>[]): Promise<Run> {
  let next = 0;
  const setupClient = perConnection ? (client: { setHeaders(h: Record<string, string>): void }) => client.setHeaders({ 'content-type': 'application/json', ...perConnection[next++ % perConnection.length] }) : undefined;
  const r = await autocannon({ url, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), connections, duration: seconds, ...(setupClient ? { setupClient } : {}) });
  return { rps: r.requests.average, p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx, total: r.requests.total };
}

async function ttft(url: string, body: unknown, headers: Record<string, string>, marker: string): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < STREAMS; i++) {
    const t0 = performance.now();
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers }, body: JSON.stringify(body) });
    const reader = res.body!.getReader();
    let text = '';
    let first = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
      if (!first && text.includes(marker)) first = performance.now() - t0;
    }
    if (res.status !== 200 || !first) throw new Error(`stream failed: ${res.status} ${text.slice(0, 300)}`);
    out.push(first);
  }
  return out.sort((a, b) => a - b);
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const f = (n: number) => n.toFixed(1).padStart(7);

async function main(): Promise<void> {
  fs.mkdirSync(path.join(ROOT, '.data'), { recursive: true });
  const cli = ensureTemporalCli(log);
  const serverUrl = await ensurePostgres(path.join(ROOT, '.data'), log);
  const database = `tollgate_bench_exec_${Date.now()}`;
  await createDatabaseIfMissing(serverUrl, database);
  const databaseUrl = withDatabase(serverUrl, database);
  await migrate(databaseUrl);
  const temporal = await startTemporalDevServer({ cli, port: await freePort(), logFile: fs.createWriteStream(path.join(ROOT, '.data', 'bench-temporal.log')) });
  const emuPort = await freePort();
  const tgPort = await freePort();
  const emuUrl = `http://127.0.0.1:${emuPort}`;
  const tgUrl = `http://127.0.0.1:${tgPort}`;
  const procs: ChildProcess[] = [];
  const db = createPool(databaseUrl, 2);
  let failed = false;
  try {
    procs.push(await child('emulator', ['src/emulator/main.ts'], { PORT: String(emuPort), HOST: '127.0.0.1' }, /listening/));
    const env: NodeJS.ProcessEnv = {
      NODE_ENV: 'production',
      PORT: String(tgPort),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: `bench-exec-${Date.now()}`,
      OPENAI_BASE_URL: `${emuUrl}/openai`,
      OPENAI_API_KEY: 'bench',
    };
    // BENCH_CPU_PROF=<dir>: write a V8 CPU profile of the Tollgate process there (on exit).
    const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF)}`] : [];
    const tg = spawn(process.execPath, [...prof, '--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
    procs.push(tg);
    await waitHttp(`${tgUrl}/v1/public/status/summary`);
    const project = await createProject(db, { name: 'bench', plan: 'enterprise' });
    const { key } = await createApiKey(db, { projectId: project.id, scope: 'client' });
    const auth = { authorization: `Bearer ${key}` };
    const spread: Record<string, string>[] = [];
    for (let i = 0; i < 32; i++) {
      const p = await createProject(db, { name: `bench-${i}`, plan: 'enterprise' });
      spread.push({ authorization: `Bearer ${(await createApiKey(db, { projectId: p.id, scope: 'client' })).key}` });
    }
    const prompt = 'Summarise the benefits of governed execution in one sentence.';
    const direct = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: prompt }], max_tokens: 64 };
    const governed = { operation: 'generate.text', messages: [{ role: 'user', content: prompt }], routing: { provider: 'openai', model: 'gpt-4o-mini' }, parameters: { max_output_tokens: 64 } };
    const directUrl = `${emuUrl}/openai/v1/chat/completions`;
    const execUrl = `${tgUrl}/v1/executions`;

    log('warm-up…');
    await load(directUrl, direct, { authorization: 'Bearer bench' }, 8, 3);
    await load(execUrl, governed, auth, 8, 5);

    const rows: [string, Run, Run][] = [];
    for (const c of [1, 32]) {
      const d = await load(directUrl, direct, { authorization: 'Bearer bench' }, c);
      const t = await load(execUrl, governed, auth, c);
      rows.push([`c=${c}`, d, t]);
    }
    {
      const d = await load(directUrl, direct, { authorization: 'Bearer bench' }, 32);
      const t = await load(execUrl, governed, {}, 32, SECONDS, spread);
      rows.push(['c=32, 32 projects', d, t]);
    }
    log('');
    log(`sync executions, ${SECONDS}s per run (latency ms)`);
    log('conc               | direct req/s   p50    p99 | tollgate req/s   p50    p99 | added p50  p99 | errors/non-2xx');
    for (const [name, d, t] of rows) {
      log(
        `${name.padEnd(18)} | ${f(d.rps)} ${f(d.p50)} ${f(d.p99)} | ${f(t.rps)} ${f(t.p50)} ${f(t.p99)} | ${f(t.p50 - d.p50)} ${f(t.p99 - d.p99)} | ${t.errors}/${t.non2xx} (direct ${d.errors}/${d.non2xx})`,
      );
      if (t.errors || t.non2xx) failed = true;
    }
    const [, d32, t32] = rows[1];
    const addedP50 = t32.p50 - d32.p50;
    const addedP99 = t32.p99 - d32.p99;
    log(`targets at c=32, one project: added p50 ${addedP50.toFixed(1)} ms (≤ 15) ${addedP50 <= 15 ? 'OK' : 'MISSED'}; added p99 ${addedP99.toFixed(1)} ms (≤ 40) ${addedP99 <= 40 ? 'OK' : 'MISSED'}; ${t32.rps.toFixed(0)} executions/s (≥ 150) ${t32.rps >= 150 ? 'OK' : 'MISSED'}`);
    const [, dm, tm] = rows[2];
    log(`c=32, 32 projects: added p50 ${(tm.p50 - dm.p50).toFixed(1)} ms; added p99 ${(tm.p99 - dm.p99).toFixed(1)} ms; ${tm.rps.toFixed(0)} executions/s`);

    const sd = await ttft(directUrl, { ...direct, stream: true }, { authorization: 'Bearer bench' }, '"content"');
    const st = await ttft(execUrl, { ...governed, mode: 'stream' }, auth, 'event: delta');
    log('');
    log(`streams: time to first content delta over ${STREAMS} sequential streams (ms)`);
    log(`direct   p50 ${f(pct(sd, 50))} p99 ${f(pct(sd, 99))}`);
    log(`tollgate p50 ${f(pct(st, 50))} p99 ${f(pct(st, 99))}`);
    log(`added TTFT p50 ${f(pct(st, 50) - pct(sd, 50))} p99 ${f(pct(st, 99) - pct(sd, 99))}`);
  } finally {
    for (const p of procs) p.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1500));
    await db.end();
    await temporal.stop();
    await dropDatabase(serverUrl, database).catch(() => undefined);
  }
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
