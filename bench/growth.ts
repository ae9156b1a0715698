/**
 * `npm run bench:growth`: the gateway on a database that has grown (issue 40).
 *
 * Two bench stacks (bench/lib/stack.ts) side by side: one on a fresh database, one on a database
 * loaded before its Tollgate starts with BENCH_CALLS calls (default 5,000,000) over BENCH_DAYS days
 * (default 60) across five projects, one holding 70 % (bench/lib/call-history.ts: permits, records,
 * chain rows, the tree's stored nodes and a signed checkpoint, every hash by the product's own
 * functions). Then, printing every figure with its parameters:
 *
 * 1. Throughput: BENCH_ROUNDS rounds (default 3) of BENCH_SECONDS (default 10) of `POST
 *    /v1/executions` at C callers (default 32) on each stack, interleaved (the order alternates):
 *    the loaded database's calls/s against the fresh one's, on the big project.
 * 2. Reads over HTTP on the loaded stack, BENCH_READS each (default 200), quiet and then under a c=C
 *    load: the request log's first page and the page after it (`GET /v1/calls`), a page at a random
 *    point of the history (a cursor there), and request timelines of old (loaded) and new calls.
 * 3. Resuming the governance event stream (`GET /v1/governance/events/stream`, Last-Event-ID an old
 *    position): time to the first record, and `integrity verify` of the big project (`verifyLog`,
 *    what `npm run cli -- integrity verify` runs): records per second.
 * 4. Retention under a c=C load: every project's retention set so that only the history's first
 *    day (the oldest week partition, which holds that one Sunday) is past it, then `npm run cli --
 *    retention run --before <that Monday>` in its own process; when it dropped no partition (an
 *    archive ends on a multiple of 16 leaves, so a few records before the cutoff can stay), the
 *    next hourly round (`--before` an hour later) too. Its time, the calls' p99 and max meanwhile
 *    against the p99 before, and the database's size before and after.
 *
 * BENCH_HISTORY_DB=<name> keeps the loaded history in that database (loaded on the first run) and
 * runs on a copy of it, so that a rerun skips the load (bench/lib/history-db.ts).
 *
 * BENCH_VACUUM_MS (default 5000) runs a plain VACUUM of both databases that often, as autovacuum
 * would (a development server may run without it; 0: never), and reports how long they ran beside
 * the quiet reads and verify; BENCH_SQL runs SQL on both databases before
 * their Tollgate starts (a candidate index, say).
 *
 *   BENCH_CALLS=100000 npm run bench:growth      # a quick run
 *   npm run bench:growth                         # 5 million calls, ~30-40 minutes
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Teardown } from './lib/children';
import { backgroundLoad, load, pct, type Run } from './lib/load';
import { BENCH_MASTER_KEY, ROOT, startStack, type Stack } from './lib/stack';
import { BENCH_BODIES } from './lib/workload';
import { loadCallHistory, type CallHistory } from './lib/call-history';
import { historyDatabase } from './lib/history-db';
import { dropDatabase } from '../scripts/lib/postgres';
import { encodeCursor } from '../src/api/cursor';
import { createApiKey } from '../src/db/repositories/api-keys';
import { verifyLog } from '../src/integrity/verify-log';
import { SOURCE_NODE_ARGS } from '../scripts/lib/source-node-args';
import type { Db } from '../src/db/pool';
import { weekStart } from '../src/db/partitions';

const CALLS = Number(process.env.BENCH_CALLS ?? 5_000_000);
const DAYS = Number(process.env.BENCH_DAYS ?? 60);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const C = Number(process.env.C ?? 32);
const READS = Number(process.env.BENCH_READS ?? 200);
const STREAM_RESUMES = Number(process.env.BENCH_STREAM_RESUMES ?? 20);
/** Resumes printed one by one, apart from the rest (a process's first pay for cold connections and code). */
const STREAM_WARM = 5;
const VACUUM_MS = Number(process.env.BENCH_VACUUM_MS ?? 5000);
/** SQL run on both databases before their Tollgate starts (e.g. a candidate index), as `bench:footprint -- --pipeline` takes it. */
const EXTRA_SQL = process.env.BENCH_SQL ?? '';
/** A kept database holding the loaded history (bench/lib/history-db.ts): each run works on a copy, and skips the load. */
const HISTORY_DB = process.env.BENCH_HISTORY_DB ?? '';
const ADMIN_URL = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DAY_MS = 86_400_000;
const log = (m: string) => console.error(`[bench:growth] ${m}`);
const ms = (x: number) => x.toFixed(1);
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);

function summary(times: number[]): { p50: number; p99: number; max: number } {
  const s = [...times].sort((a, b) => a - b);
  return { p50: pct(s, 50), p99: pct(s, 99), max: s[s.length - 1] };
}

async function getJson(url: string, key: string): Promise<{ ms: number; body: unknown }> {
  const t = performance.now();
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  const text = await res.text();
  const took = performance.now() - t;
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${text.slice(0, 300)}`);
  return { ms: took, body: JSON.parse(text) };
}

/** Milliseconds from the request to the first `data:` record of the governance event stream resumed after `position`. */
async function streamFirstRecord(baseUrl: string, key: string, position: number): Promise<number> {
  const abort = new AbortController();
  const t = performance.now();
  try {
    const res = await fetch(`${baseUrl}/v1/governance/events/stream`, {
      headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', 'last-event-id': String(position) },
      signal: abort.signal,
    });
    if (res.status !== 200) throw new Error(`stream: ${res.status} ${await res.text()}`);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended before a record: ${text.slice(0, 300)}`);
      text += decoder.decode(value, { stream: true });
      if (/(^|\n)data: /.test(text)) return performance.now() - t;
    }
  } finally {
    abort.abort();
  }
}

/** Bytes of the database and of the tables the history fills (a partitioned table: all its partitions). */
async function sizes(db: Db): Promise<Record<string, number>> {
  const { rows } = await db.query<{ name: string; bytes: string }>(
    `SELECT 'database' AS name, pg_database_size(current_database())::text AS bytes
     UNION ALL SELECT t, coalesce((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree(t::regclass) WHERE isleaf), pg_total_relation_size(t::regclass))::text
       FROM unnest(ARRAY['calls', 'permits', 'event_chain', 'merkle_nodes', 'events']) AS t
     UNION ALL SELECT c.relname, pg_total_relation_size(c.oid)::text
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent IN ('calls'::regclass, 'permits'::regclass)`,
  );
  return Object.fromEntries(rows.map((r) => [r.name, Number(r.bytes)]));
}

/** Bytes of the week partitions of the loaded history (those before the current week's, which the live calls fill). */
function historyWeeks(s: Record<string, number>, currentWeek: string): number {
  return Object.entries(s)
    .filter(([name]) => /_w[0-9]{8}$/.test(name) && name.slice(-8) < currentWeek)
    .reduce((n, [, bytes]) => n + bytes, 0);
}

/**
 * Runs the operator's CLI against the loaded stack's database in its own process: the compiled
 * build's, as the image runs it (`node dist/src/cli/index.js`) and as the stack runs Tollgate, when
 * present; else through tsx (`npm run cli -- …`), which transpiles its modules as it starts.
 */
function runCli(stack: Stack, args: string[], archiveDir: string): Promise<{ ms: number; out: unknown }> {
  const compiled = path.join(ROOT, 'dist', 'src', 'cli', 'index.js');
  const entry = fs.existsSync(compiled) && process.env.BENCH_TSX !== '1' ? [compiled] : [...SOURCE_NODE_ARGS, 'src/cli/index.ts'];
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const child = spawn(process.execPath, [...entry, ...args], {
      cwd: ROOT,
      env: { ...process.env, NODE_ENV: 'production', DATABASE_URL: stack.databaseUrl, TOLLGATE_MASTER_KEY: BENCH_MASTER_KEY, ARCHIVE_DIR: archiveDir, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => {
      const took = performance.now() - t;
      if (code !== 0) reject(new Error(`cli ${args.join(' ')} exited ${code}: ${err.slice(-2000)}`));
      else resolve({ ms: took, out: JSON.parse(out) });
    });
  });
}

/** Checkpoints the server has performed, timed and requested (PostgreSQL 17 keeps them in pg_stat_checkpointer, earlier ones in pg_stat_bgwriter). */
async function checkpointCount(db: Db): Promise<number> {
  const { rows } = await db.query<{ view: string | null }>("SELECT to_regclass('pg_catalog.pg_stat_checkpointer')::text AS view");
  const sql = rows[0].view ? 'SELECT num_timed + num_requested AS n FROM pg_stat_checkpointer' : 'SELECT checkpoints_timed + checkpoints_req AS n FROM pg_stat_bgwriter';
  return Number((await db.query<{ n: string }>(sql)).rows[0].n);
}

/**
 * A plain VACUUM of each database every VACUUM_MS until stopped, as autovacuum does on a production
 * server (the development server may run without it): the permits' settling updates then reuse
 * space. Paused around retention, whose partition drop would wait for a VACUUM's lock.
 */
function vacuumLoop(dbs: Db[], runs: VacuumRuns): { stop(): Promise<void> } {
  let running = VACUUM_MS > 0;
  const loop = (async () => {
    while (running) {
      await new Promise((r) => setTimeout(r, VACUUM_MS));
      for (const db of dbs) {
        if (!running) break;
        const t = performance.now();
        await db.query('VACUUM');
        runs.push([t, performance.now()]);
      }
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/** When each of the loop's VACUUMs ran (performance.now() at its start and end). */
type VacuumRuns = [number, number][];

/** The loop's VACUUMs that overlapped [from, to): how many, for how long in all, and the longest. */
function vacuumsIn(runs: VacuumRuns, from: number, to: number): string {
  const overlapping = runs.filter(([a, b]) => b > from && a < to);
  const sum = overlapping.reduce((ms, [a, b]) => ms + Math.min(b, to) - Math.max(a, from), 0);
  const longest = Math.max(0, ...overlapping.map(([a, b]) => b - a));
  return `${overlapping.length} VACUUMs ran ${(sum / 1000).toFixed(1)} s of its ${((to - from) / 1000).toFixed(1)} s (the longest ${(longest / 1000).toFixed(1)} s)`;
}

async function main(): Promise<void> {
  const teardown = new Teardown();
  teardown.onSignals();
  const archiveDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-growth-archives-'));
  teardown.add('archives', async () => fs.rmSync(archiveDir, { recursive: true, force: true }));
  try {
    log(`BENCH_CALLS=${CALLS} BENCH_DAYS=${DAYS} BENCH_ROUNDS=${ROUNDS} BENCH_SECONDS=${SECONDS} C=${C} BENCH_READS=${READS}`);
    const extraSql = async (db: Db) => {
      if (EXTRA_SQL) await db.query(EXTRA_SQL);
    };
    const empty = await startStack({ name: 'growth_empty', teardown, log, beforeTollgate: extraSql });
    const { key: emptyKey } = await empty.newProjectKey('growth empty');
    let history: CallHistory | null = null;
    // With BENCH_HISTORY_DB, a copy of that kept history (loaded there first when missing), dropped after the run.
    let copy: string | undefined;
    if (HISTORY_DB) {
      copy = `tollgate_bench_growth_${process.pid}`;
      const name = copy;
      teardown.add('drop the history copy', () => dropDatabase(ADMIN_URL, name));
      history = (await historyDatabase({ adminUrl: ADMIN_URL, name, historyDb: HISTORY_DB, calls: CALLS, days: DAYS, log })).history;
    }
    const loaded = await startStack({
      name: 'growth',
      teardown,
      log,
      database: copy,
      beforeTollgate: async (db, databaseUrl) => {
        await extraSql(db);
        if (!history) history = await loadCallHistory(databaseUrl, { env: 'production', masterKey: BENCH_MASTER_KEY, databaseUrl }, { calls: CALLS, days: DAYS, now: new Date(), log });
      },
    });
    const h = history as CallHistory | null;
    if (!h) throw new Error('the history was not loaded');
    const big = h.projects[0];
    const { key: bigKey } = await createApiKey(loaded.db, { projectId: big.id, scope: 'client', name: 'bench growth' });
    const loadedSizes = await sizes(loaded.db);
    const autovacuum = (await loaded.db.query<{ setting: string }>("SELECT setting FROM pg_settings WHERE name = 'autovacuum'")).rows[0].setting;
    const maxWalSize = (await loaded.db.query<{ size: string }>("SELECT current_setting('max_wal_size') AS size")).rows[0].size;
    const vacuumRuns: VacuumRuns = [];
    let vacuums = vacuumLoop([empty.db, loaded.db], vacuumRuns);

    // 1. Throughput, interleaved.
    const call = (stack: Stack, key: string, seconds: number): Promise<Run> =>
      load({ url: `${stack.tollgateUrl}/v1/executions`, body: BENCH_BODIES.governed, headers: { authorization: `Bearer ${key}` }, connections: C, seconds, timeoutSeconds: 30 });
    // What the setup wrote (a history loaded or copied, the migrations) written out before the rounds:
    // left to the server's next checkpoints, their syncs stalled the calls' commits in a round.
    await loaded.db.query('CHECKPOINT');
    log('warm-up: 3 s on each stack');
    await call(empty, emptyKey, 3);
    await call(loaded, bigKey, 3);
    const checkpointsBeforeRounds = await checkpointCount(loaded.db);
    const rounds: { empty: Run; loaded: Run }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const first = r % 2 === 0 ? 'empty' : 'loaded';
      const a = first === 'empty' ? await call(empty, emptyKey, SECONDS) : await call(loaded, bigKey, SECONDS);
      const b = first === 'empty' ? await call(loaded, bigKey, SECONDS) : await call(empty, emptyKey, SECONDS);
      const round = first === 'empty' ? { empty: a, loaded: b } : { empty: b, loaded: a };
      rounds.push(round);
      log(`round ${r + 1}: empty ${round.empty.rps.toFixed(0)} calls/s, loaded ${round.loaded.rps.toFixed(0)} calls/s (${(round.loaded.rps / round.empty.rps).toFixed(2)}×)`);
    }
    const checkpointsInRounds = (await checkpointCount(loaded.db)) - checkpointsBeforeRounds;
    for (const r of rounds) {
      for (const run of [r.empty, r.loaded]) if ((run.statusCodes['200'] ?? 0) !== run.total || run.errors > 0) throw new Error(`calls failed: ${JSON.stringify(run.statusCodes)}, errors ${run.errors}`);
    }

    // 2. Reads, quiet and under load.
    const { rows: newest } = await loaded.db.query<{ id: string }>('SELECT id FROM calls WHERE project_id = $1 ORDER BY created_at DESC LIMIT $2', [big.id, READS]);
    const newIds = newest.map((r) => r.id);
    const oldIds = h.sampleIds;
    const historyMs = h.end.getTime() - h.start.getTime();
    const shapes: [string, (i: number) => Promise<number>][] = [
      ['calls: first page (50)', async () => (await getJson(`${loaded.tollgateUrl}/v1/calls?limit=50`, bigKey)).ms],
      [
        'calls: next page (cursor)',
        async () => {
          const first = (await getJson(`${loaded.tollgateUrl}/v1/calls?limit=50`, bigKey)).body as { next_cursor: string };
          return (await getJson(`${loaded.tollgateUrl}/v1/calls?limit=50&cursor=${first.next_cursor}`, bigKey)).ms;
        },
      ],
      [
        'calls: page at a random point',
        async (i) => {
          const t = new Date(h.start.getTime() + ((i * 7919) % READS) * (historyMs / READS)).toISOString().replace('Z', '000Z');
          return (await getJson(`${loaded.tollgateUrl}/v1/calls?limit=50&cursor=${encodeCursor({ t, id: 'exec_req_f' })}`, bigKey)).ms;
        },
      ],
      ['timeline: loaded call', async (i) => (await getJson(`${loaded.tollgateUrl}/v1/requests/${oldIds[(i * 7919) % oldIds.length]}/timeline`, bigKey)).ms],
      ['timeline: new call', async (i) => (await getJson(`${loaded.tollgateUrl}/v1/requests/${newIds[i % newIds.length]}/timeline`, bigKey)).ms],
    ];
    // Each shape's first read and which read was the slowest too: a connection's first statement over every week's partitions plans them all.
    type ReadSummary = ReturnType<typeof summary> & { first: number; slowestAt: number };
    const readFigures: { shape: string; quiet: ReadSummary; loaded: ReadSummary }[] = [];
    const readAll = async () => {
      const out: ReadSummary[] = [];
      for (const [, read] of shapes) {
        const times: number[] = [];
        for (let i = 0; i < READS; i++) times.push(await read(i));
        const sum = summary(times);
        out.push({ ...sum, first: times[0], slowestAt: times.indexOf(sum.max) + 1 });
      }
      return out;
    };
    log(`reads: ${READS} of each shape, quiet`);
    const quietFrom = performance.now();
    const quiet = await readAll();
    const quietTo = performance.now();
    log(`reads: ${READS} of each shape under a c=${C} load`);
    const bg = backgroundLoad({ url: `${loaded.tollgateUrl}/v1/executions`, body: BENCH_BODIES.governed, headers: { authorization: `Bearer ${bigKey}` }, connections: C, seconds: 900, timeoutSeconds: 30 });
    await new Promise((r) => setTimeout(r, 2000));
    const busy = await readAll();
    const bgDone = await bg.stop();
    shapes.forEach(([shape], k) => readFigures.push({ shape, quiet: quiet[k], loaded: busy[k] }));

    // 3. The event stream resumed from old positions, and integrity verify.
    log(`stream: ${STREAM_RESUMES} resumes from old positions`);
    const streamTimes: number[] = [];
    for (let i = 0; i < STREAM_RESUMES; i++) streamTimes.push(await streamFirstRecord(loaded.tollgateUrl, bigKey, 1 + ((i * 104_729) % Math.max(1, Math.floor(big.leaves / 2)))));
    const stream = summary(streamTimes);
    // The process's first resumes also pay for connections that never read the old weeks' partitions yet, and for code not yet compiled.
    const streamAfterFirst = streamTimes.length > STREAM_WARM ? summary(streamTimes.slice(STREAM_WARM)) : null;
    log('integrity verify of the big project');
    const tv = performance.now();
    const verification = await verifyLog(loaded.db, big.id);
    const verifyMs = performance.now() - tv;
    if (!verification.ok) throw new Error(`integrity verify failed: ${verification.failures.join('; ')}`);

    // 4. Retention of the history's first day under load.
    const monday = new Date(h.start.getTime() + DAY_MS);
    const retentionDays = Math.floor((Date.now() - monday.getTime()) / DAY_MS);
    await loaded.db.query('UPDATE projects SET retention_days = $1', [retentionDays]);
    const before = await sizes(loaded.db);
    log(`retention: every project keeps ${retentionDays} days; rounds --before ${monday.toISOString()} under a c=${C} load`);
    const rl = backgroundLoad({ url: `${loaded.tollgateUrl}/v1/executions`, body: BENCH_BODIES.governed, headers: { authorization: `Bearer ${bigKey}` }, connections: C, seconds: 1800, timeoutSeconds: 30 });
    await new Promise((r) => setTimeout(r, 12_000));
    await vacuums.stop();
    const retentionRounds: { before: string; ms: number; from: number; to: number; archived: number; dropped: string[]; phases: Record<string, number> }[] = [];
    // The server's checkpoints meanwhile: each first change of a page after one writes the whole page into the WAL the calls' commits wait on.
    const checkpointsBefore = await checkpointCount(loaded.db);
    for (const cutoff of [monday, new Date(monday.getTime() + 3600_000)]) {
      const from = performance.now();
      const r = await runCli(loaded, ['retention', 'run', '--before', cutoff.toISOString()], archiveDir);
      const report = r.out as {
        projects: { archive: { log_range: { first_index: number; last_index: number } } | null }[];
        partitions_dropped: string[];
        partitions_kept?: { partition: string; reason: string }[];
        phases_ms?: Record<string, number>;
      };
      const archived = report.projects.reduce((n, p) => n + (p.archive ? p.archive.log_range.last_index - p.archive.log_range.first_index + 1 : 0), 0);
      retentionRounds.push({ before: cutoff.toISOString(), ms: r.ms, from, to: performance.now(), archived, dropped: report.partitions_dropped, phases: report.phases_ms ?? {} });
      const kept = (report.partitions_kept ?? []).map((k) => `${k.partition} (${k.reason})`).join('; ');
      log(`retention --before ${cutoff.toISOString()}: ${(r.ms / 1000).toFixed(1)} s, ${archived} leaves archived, dropped ${report.partitions_dropped.join(', ') || 'nothing'}${kept ? `; kept ${kept}` : ''}; phases (ms) ${JSON.stringify(report.phases_ms ?? {})}`);
      if (report.partitions_dropped.length > 0) break;
    }
    const checkpointsDuring = (await checkpointCount(loaded.db)) - checkpointsBefore;
    vacuums = vacuumLoop([empty.db, loaded.db], vacuumRuns);
    await new Promise((r) => setTimeout(r, 5000));
    const rlDone = await rl.stop();
    await vacuums.stop();
    if (VACUUM_MS > 0) await loaded.db.query('VACUUM');
    const after = await sizes(loaded.db);
    const firstFrom = retentionRounds[0].from;
    // "Before": from 2 s after the load started to retention's start; "during": while a round ran.
    const startedAt = rlDone.responses.length ? rlDone.responses[0][0] - rlDone.responses[0][1] : firstFrom;
    const beforeList = rlDone.responses.filter(([t]) => t > startedAt + 2000 && t < firstFrom).map(([, l]) => l);
    const beforeLat = summary(beforeList);
    // The floor the "during" count stands on: calls of the window before that were already above 2× its own p99.
    const slowBefore = beforeList.filter((l) => l > 2 * beforeLat.p99).length;
    const duringList = rlDone.responses.filter(([t, l]) => retentionRounds.some((r) => t - l < r.to && t > r.from)).map(([, l]) => l);
    const during = summary(duringList);
    const slow = duringList.filter((l) => l > 2 * beforeLat.p99).length;
    // Where the slow calls fell: each round's, and those in flight during its partitions' drop
    // (the run's last `drop` ms; the CLI's exit after it is a few ms); and when, against the round's
    // steps: the seconds after the CLI's start at which they ended, and at which each phase of its
    // report ended (the CLI's own start before the first).
    const slowByRound = retentionRounds.map((r) => rlDone.responses.filter(([t, l]) => l > 2 * beforeLat.p99 && t - l < r.to && t > r.from));
    const slowWhere = retentionRounds.map((r, k) => {
      const dropFrom = r.to - (r.phases.drop ?? 0) - 50;
      return `${slowByRound[k].length} (${slowByRound[k].filter(([t, l]) => t > dropFrom && t - l < r.to).length} in flight during the drop)`;
    });
    const slowWhen = retentionRounds.map((r, k) => {
      const bySecond = new Map<number, number>();
      for (const [t] of slowByRound[k]) {
        const second = Math.floor((t - r.from) / 1000);
        bySecond.set(second, (bySecond.get(second) ?? 0) + 1);
      }
      // drop_locked and drop_tries are parts of drop, not phases of their own.
      const phases = Object.entries(r.phases).filter(([name]) => !name.startsWith('drop_'));
      let end = (r.to - r.from - phases.reduce((n, [, ms]) => n + ms, 0)) / 1000;
      const phaseEnds = phases.map(([name, ms]) => `${name} ${(end += ms / 1000).toFixed(1)}`);
      return `  round ${k + 1} (began ${new Date(performance.timeOrigin + r.from).toISOString()}): slow calls ended at (s: count) ${[...bySecond].map(([sec, n]) => `${sec}: ${n}`).join(', ') || 'none'}; its phases ended at (s) ${phaseEnds.join(', ')}`;
    });

    // Figures.
    const ratios = rounds.map((r) => r.loaded.rps / r.empty.rps).sort((a, b) => a - b);
    const medianRatio = ratios[Math.floor(ratios.length / 2)];
    console.log(`\nbench:growth — BENCH_CALLS=${CALLS} BENCH_DAYS=${DAYS} C=${C} BENCH_ROUNDS=${ROUNDS} BENCH_SECONDS=${SECONDS} BENCH_READS=${READS}${EXTRA_SQL ? ` BENCH_SQL='${EXTRA_SQL}'` : ''}`);
    console.log(`server autovacuum ${autovacuum}; the bench runs a plain VACUUM ${VACUUM_MS > 0 ? `every ${VACUUM_MS} ms (paused while retention runs)` : 'never'}; server max_wal_size ${maxWalSize}`);
    console.log(`history: ${h.start.toISOString()} → ${h.end.toISOString()}; ${h.projects.map((p) => `${p.name} ${p.calls} calls / ${p.leaves} leaves`).join('; ')}`);
    console.log(
      `load: ${h.rows.permits} permits, ${h.rows.calls} records, ${h.rows.chain} chain rows, ${h.rows.nodes} tree nodes in ${h.seconds.rows.toFixed(0)} s ` +
        `(${(CALLS / h.seconds.rows).toFixed(0)} calls/s), VACUUM ANALYZE ${h.seconds.vacuum.toFixed(0)} s; database ${mib(loadedSizes.database)} MiB ` +
        `(calls ${mib(loadedSizes.calls)}, permits ${mib(loadedSizes.permits)}, event_chain ${mib(loadedSizes.event_chain)}, merkle_nodes ${mib(loadedSizes.merkle_nodes)})`,
    );
    console.log(`\nthroughput, POST /v1/executions c=${C}, ${SECONDS} s rounds (calls/s, p99 ms):`);
    rounds.forEach((r, i) =>
      console.log(`  round ${i + 1}: empty ${r.empty.rps.toFixed(0)} (p99 ${ms(r.empty.p99)}), loaded ${r.loaded.rps.toFixed(0)} (p99 ${ms(r.loaded.p99)}): ${(r.loaded.rps / r.empty.rps).toFixed(2)}×`),
    );
    console.log(`  median ratio loaded/empty ${medianRatio.toFixed(2)}× (target ≥ 0.9)`);
    console.log(`  the server's checkpoints begun or completed during the rounds: ${checkpointsInRounds}`);
    console.log(`\nreads on the loaded stack, ${READS} each, round trip ms (quiet p50 / p99 | under c=${C} p50 / p99; target p99 ≤ 20):`);
    for (const f of readFigures) console.log(`  ${f.shape.padEnd(32)} ${ms(f.quiet.p50).padStart(7)} / ${ms(f.quiet.p99).padStart(7)} | ${ms(f.loaded.p50).padStart(7)} / ${ms(f.loaded.p99).padStart(7)}`);
    console.log(`  beside the quiet reads the bench's loop (BENCH_VACUUM_MS) ${vacuumsIn(vacuumRuns, quietFrom, quietTo)}`);
    console.log(`  each shape's first read and its slowest (read #), quiet | under c=${C}:`);
    for (const f of readFigures) console.log(`  ${f.shape.padEnd(32)} first ${ms(f.quiet.first)}, slowest #${f.quiet.slowestAt} ${ms(f.quiet.max)} | first ${ms(f.loaded.first)}, slowest #${f.loaded.slowestAt} ${ms(f.loaded.max)}`);
    console.log(`  (the load meanwhile: ${bgDone.responses.length} calls, ${JSON.stringify(bgDone.statusCodes)})`);
    console.log(`\nevent stream resumed from an old Last-Event-ID, first record ms (${STREAM_RESUMES} resumes): p50 ${ms(stream.p50)}, p99 ${ms(stream.p99)}, max ${ms(stream.max)} (target ≤ 100)`);
    if (streamAfterFirst) console.log(`  the first ${STREAM_WARM}: ${streamTimes.slice(0, STREAM_WARM).map(ms).join(', ')}; the ${streamTimes.length - STREAM_WARM} after them: p50 ${ms(streamAfterFirst.p50)}, p99 ${ms(streamAfterFirst.p99)}, max ${ms(streamAfterFirst.max)}`);
    console.log(
      `integrity verify (big project): ${verification.events_verified} records in ${(verifyMs / 1000).toFixed(1)} s = ${(verification.events_verified / (verifyMs / 1000)).toFixed(0)} records/s ` +
        `(chain walk and checkpoint root; target ≥ 50,000), ok ${verification.ok}; beside it the bench's loop ${vacuumsIn(vacuumRuns, tv, tv + verifyMs)}`,
    );
    console.log(`\nretention under a c=${C} load (each project keeps ${retentionDays} days):`);
    for (const r of retentionRounds) console.log(`  --before ${r.before}: ${(r.ms / 1000).toFixed(1)} s (CLI process, start included), ${r.archived} leaves archived, dropped: ${r.dropped.join(', ') || 'nothing'}; phases (ms) ${JSON.stringify(r.phases)}`);
    console.log(
      `  calls before: ${beforeList.length}, p99 ${ms(beforeLat.p99)} ms, ${slowBefore} of them slower than 2× that p99; during: ${duringList.length} calls, p50 ${ms(during.p50)}, p99 ${ms(during.p99)}, max ${ms(during.max)} ms; ` +
        `${slow} slower than 2× the p99 before, by round ${slowWhere.join(', ')} (${JSON.stringify(rlDone.statusCodes)})`,
    );
    for (const line of slowWhen) console.log(line);
    console.log(`  the server's checkpoints begun or completed during the rounds: ${checkpointsDuring} (max_wal_size ${maxWalSize})`);
    const row = (k: string) => `${k} ${mib(before[k])} → ${mib(after[k])}`;
    const currentWeek = weekStart(new Date()).toISOString().slice(0, 10).replaceAll('-', '');
    const droppedBytes = retentionRounds.flatMap((r) => r.dropped).reduce((n, name) => n + (before[name] ?? 0), 0);
    console.log(`  MiB before → after: ${['database', 'calls', 'permits', 'event_chain', 'merkle_nodes', 'events'].map(row).join(', ')}`);
    const liveBefore = before.calls + before.permits - historyWeeks(before, currentWeek);
    const liveAfter = after.calls + after.permits - historyWeeks(after, currentWeek);
    console.log(
      `  the history's week partitions: ${mib(historyWeeks(before, currentWeek))} → ${mib(historyWeeks(after, currentWeek))} MiB (the dropped ones held ${mib(droppedBytes)}); ` +
        `the current week's, which the live calls fill: ${mib(liveBefore)} → ${mib(liveAfter)} MiB`,
    );
  } finally {
    await teardown.run();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
