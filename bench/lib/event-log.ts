/** What the integrity benches (`bench:log --checkpoint`, `--export`) share: a throwaway database with a grown event log, and a measured run. */
import { createDatabaseIfMissing, dropDatabase, withDatabase } from '../../scripts/lib/postgres';
import { migrate } from '../../src/db/migrate';
import { createPool, type Db } from '../../src/db/pool';
import { appendEvents } from '../../src/db/repositories/events';
import { chainAllProjectEvents } from '../../src/db/repositories/event-chain';
import { createProject } from '../../src/db/repositories/projects';
import { machineCpuMs, postgresCpuMs } from './cpu';

const ADMIN_URL = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Runs `fn` on a migrated throwaway database (tollgate_bench_<label>_<pid> on DATABASE_ADMIN_URL,
 * default the local server) with one production-plan project; drops the database afterwards.
 */
export async function onThrowawayDatabase(label: string, fn: (ctx: { db: Db; url: string; projectId: string }) => Promise<void>): Promise<void> {
  const name = `tollgate_bench_${label}_${process.pid}`;
  await createDatabaseIfMissing(ADMIN_URL, name);
  const url = withDatabase(ADMIN_URL, name);
  const db = createPool(url, 4);
  try {
    await migrate(url);
    const project = await createProject(db, { name: `bench ${label}`, plan: 'production' });
    await fn({ db, url, projectId: project.id });
  } finally {
    await db.end();
    await dropDatabase(ADMIN_URL, name);
  }
}

/** Appends `n` events shaped as a governed call's (its ids, provider, model and metadata), 500 per statement, and chains them. */
export async function growEventLog(db: Db, projectId: string, n: number): Promise<void> {
  for (let done = 0; done < n; done += 500) {
    const k = Math.min(500, n - done);
    await appendEvents(
      db,
      Array.from({ length: k }, (_, j) => ({
        projectId,
        eventType: 'execution.started',
        source: 'execution_events',
        phase: 'execution',
        provider: 'openai',
        model: 'gpt-4o-mini',
        permitId: `pmt_${done + j}`,
        requestId: `exec_req_${done + j}`,
        metadata: { mode: 'sync', operation: 'generate.text' },
      })),
    );
  }
  await chainAllProjectEvents(db, projectId);
}

/**
 * Runs `fn` and measures it: wall time (ms), this process's CPU (µs), PostgreSQL's CPU (ms, every
 * backend of the local server), the whole machine's busy and idle CPU (ms, every core) and the
 * event loop's longest wait meanwhile (ms, the largest gap of a 0 ms interval timer).
 */
export async function measured<T>(
  fn: () => Promise<T>,
): Promise<{ result: T; ms: number; cpuUs: number; postgresMs: number; machine: { busy: number; idle: number }; longestWaitMs: number }> {
  let longest = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 0);
  const pg0 = postgresCpuMs();
  const machine0 = machineCpuMs();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  try {
    const result = await fn();
    const cpu = process.cpuUsage(cpu0);
    const machine1 = machineCpuMs();
    return {
      result,
      ms: performance.now() - t0,
      cpuUs: cpu.user + cpu.system,
      postgresMs: postgresCpuMs() - pg0,
      machine: { busy: machine1.busy - machine0.busy, idle: machine1.idle - machine0.idle },
      longestWaitMs: longest,
    };
  } finally {
    clearInterval(timer);
  }
}
