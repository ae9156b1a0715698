/**
 * The governed-call pipeline's database work alone: `govern` (tollgate_govern_calls) and `record`
 * (tollgate_record_calls) of activities/governed-call.ts with a stub provider that answers at
 * once, on one project, C concurrent callers for BENCH_SECONDS. Prints calls/s, the latency of each
 * step, PostgreSQL CPU per call and the per-function time PostgreSQL spent (pg_stat_user_functions).
 *
 *   BENCH_SECONDS=5 C=32 npm run bench:footprint -- --pipeline
 *
 * BENCH_POLICY='<json>' sets the project's policy first (e.g. a rate limit and a daily cap, so the rate and cap
 * checks are part of the measured work).
 * BENCH_PROJECTS=N spreads the callers over N projects (caller i calls for project i mod N), as the
 * gateway bench's "32 projects" rows do.
 * BENCH_SEQUENCER=0 leaves the event-chain sequencer off (it runs every 250 ms by default, as in the
 * API process); BENCH_SQL runs extra SQL after the migrations (for experiments, e.g. dropping an index).
 *
 * Uses a throwaway database (tollgate_bench_pipeline_<pid>) on DATABASE_ADMIN_URL (default the local
 * server), dropped afterwards.
 */
import { spawnSync } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createDatabaseIfMissing, dropDatabase } from '../../scripts/lib/postgres';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { createProject } from '../../src/db/repositories/projects';
import { updatePolicy } from '../../src/db/repositories/policies';
import { startSequencer } from '../../src/events/sequencer';
import { createLogger } from '../../src/logger';
import { postgresCpuMs, processCpuMs } from '../lib/cpu';
import { governedCalls } from '../lib/governed-calls';
import { pct } from '../lib/load';

const ADMIN_URL = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.C ?? 32);
const PROJECTS = Math.max(1, Number(process.env.BENCH_PROJECTS ?? 1));

export async function run(): Promise<void> {
  const name = `tollgate_bench_pipeline_${process.pid}`;
  await createDatabaseIfMissing(ADMIN_URL, name);
  const url = ADMIN_URL.replace(/\/[^/?]*(\?|$)/, `/${name}$1`);
  const db = createPool(`${url}${url.includes('?') ? '&' : '?'}options=-c%20track_functions%3Dall`, 20);
  try {
    await migrate(url);
    if (process.env.BENCH_SQL) await db.query(process.env.BENCH_SQL);
    const sequencer = process.env.BENCH_SEQUENCER === '0' ? null : startSequencer({ db, logger: createLogger('warn') });
    const projects = await Promise.all(Array.from({ length: PROJECTS }, (_, i) => createProject(db, { name: `bench ${i}`, plan: 'enterprise' })));
    if (process.env.BENCH_POLICY) {
      for (const project of projects) await updatePolicy(db, { projectId: project.id, patch: JSON.parse(process.env.BENCH_POLICY), mode: 'merge', updatedBy: 'bench', now: new Date() });
    }
    const governedCall = governedCalls(db);
    const govern: number[] = [];
    const record: number[] = [];
    let n = 0;
    const walLsn = async () => (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn;
    const wal0 = await walLsn();
    // The backends of this database (the pool is warm: its connections stay open for the run).
    await Promise.all(Array.from({ length: 20 }, () => db.query('SELECT pg_sleep(0.01)')));
    const backendPids = (await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database()')).rows.map((r) => r.pid);
    const backendsCpu = () => backendPids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
    const own0 = backendsCpu();
    const pg0 = postgresCpuMs();
    const eld = monitorEventLoopDelay({ resolution: 1 });
    eld.enable();
    const cpu0 = process.cpuUsage();
    const end = Date.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, caller) => {
        const projectId = projects[caller % projects.length].id;
        while (Date.now() < end) {
          const t = await governedCall(projectId);
          if (t.decision !== 'allow') throw new Error(`not allowed: ${t.decision}`);
          govern.push(t.govern);
          record.push(t.record);
          n += 1;
        }
      }),
    );
    const cpu1 = process.cpuUsage(cpu0);
    eld.disable();
    await sequencer?.runOnce();
    const pgMs = postgresCpuMs() - pg0;
    const ownMs = backendsCpu() - own0;
    await sequencer?.close();
    const { rows: walRows } = await db.query<{ bytes: string }>('SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint AS bytes', [await walLsn(), wal0]);
    govern.sort((a, b) => a - b);
    record.sort((a, b) => a - b);
    const f = (v: number) => v.toFixed(2);
    console.log(`c=${CONCURRENCY}, ${SECONDS} s, ${PROJECTS === 1 ? 'one project' : `${PROJECTS} projects`}: ${(n / SECONDS).toFixed(0)} calls/s`);
    console.log(`govern p50 ${f(pct(govern, 50))} p99 ${f(pct(govern, 99))} ms; record p50 ${f(pct(record, 50))} p99 ${f(pct(record, 99))} ms`);
    console.log(`this process: ${f((cpu1.user + cpu1.system) / 1000 / n)} ms of CPU per call (${((cpu1.user + cpu1.system) / 1000 / SECONDS / 10).toFixed(0)} % of a core); event loop delay p50 ${f(eld.percentile(50) / 1e6)} p99 ${f(eld.percentile(99) / 1e6)} mean ${f(eld.mean / 1e6)} ms`);
    console.log(`PostgreSQL CPU: ${f(ownMs / n)} ms per call in this run's backends, ${f(pgMs / n)} in every postgres process on the machine; WAL ${(Number(walRows[0].bytes) / n).toFixed(0)} bytes per call (${wal0}..)`);
    if (process.env.BENCH_WALDUMP) {
      // BENCH_WALDUMP=<pg_wal directory>: the WAL written during the run, by record type (pg_waldump --stats).
      const end = await walLsn();
      const out = spawnSync('pg_waldump', ['-p', process.env.BENCH_WALDUMP, '-s', wal0, '-e', end, '--stats=record'], { encoding: 'utf8' });
      console.log(out.stdout || out.stderr);
    }
    const { rows } = await db.query<{ funcname: string; calls: number; total: number; self: number }>(
      'SELECT funcname, calls, total_time AS total, self_time AS self FROM pg_stat_user_functions ORDER BY total_time DESC',
    );
    console.log('function                    calls   total ms/call  self ms/call');
    for (const r of rows) console.log(`${r.funcname.padEnd(26)} ${String(r.calls).padStart(6)} ${f(r.total / n).padStart(14)} ${f(r.self / n).padStart(13)}`);
  } finally {
    await db.end();
    // BENCH_KEEP_DB=1 keeps the database for a look afterwards (EXPLAIN of the sequencer's statements).
    if (process.env.BENCH_KEEP_DB === '1') console.log(`database kept: ${name}`);
    else await dropDatabase(ADMIN_URL, name).catch(() => undefined);
  }
}
