/** What the integrity benches (bench:checkpoint, bench:export) share: a throwaway database with a grown event log, and an event-loop probe. */
import { createDatabaseIfMissing, dropDatabase, withDatabase } from '../../scripts/lib/postgres';
import { migrate } from '../../src/db/migrate';
import { createPool, type Db } from '../../src/db/pool';
import { appendEvents, chainAllProjectEvents } from '../../src/db/repositories/events';
import { createProject } from '../../src/db/repositories/projects';

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

/** Starts measuring the event loop's longest wait (the largest gap of a 0 ms interval timer); `stop` returns it in ms. */
export function longestWaitProbe(): { stop(): number } {
  let longest = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 0);
  return {
    stop() {
      clearInterval(timer);
      return longest;
    },
  };
}
