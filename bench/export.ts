/**
 * What building a compliance export's events part costs Tollgate's process (not a test):
 * `npm run bench:export`.
 *
 * The part (src/compliance/build.ts) writes every event of the window out with its inclusion
 * proof. It runs in the API process unless the worker runs apart, so besides its CPU per event
 * this prints the longest the event loop waited meanwhile (a 0 ms interval timer's largest gap).
 * On a throwaway database: BENCH_EVENTS (default 10,000) events shaped as a governed call's,
 * chained and checkpointed, then BENCH_ROUNDS (default 3) exports of all of them.
 */
import { createDatabaseIfMissing, dropDatabase, withDatabase } from '../scripts/lib/postgres';
import { buildExportPart, prepareExport } from '../src/compliance/build';
import { migrate } from '../src/db/migrate';
import { createPool } from '../src/db/pool';
import { insertExport } from '../src/db/repositories/compliance-exports';
import { appendEvents, chainAllProjectEvents } from '../src/db/repositories/events';
import { createProject } from '../src/db/repositories/projects';

const ADMIN_URL = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

async function main(): Promise<void> {
  const name = `tollgate_bench_export_${process.pid}`;
  await createDatabaseIfMissing(ADMIN_URL, name);
  const url = withDatabase(ADMIN_URL, name);
  const db = createPool(url, 4);
  try {
    await migrate(url);
    const project = await createProject(db, { name: 'bench export', plan: 'production' });
    const since = new Date(Date.now() - 60_000);
    for (let done = 0; done < EVENTS; done += 500) {
      const k = Math.min(500, EVENTS - done);
      await appendEvents(
        db,
        Array.from({ length: k }, (_, j) => ({
          projectId: project.id,
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
    await chainAllProjectEvents(db, project.id);
    const deps = { db, config: { env: 'test' as const, masterKey: undefined, databaseUrl: url } };
    for (let r = 1; r <= ROUNDS; r++) {
      const row = await insertExport(db, { id: `exp_bench_${r}`, projectId: project.id, since, until: new Date(Date.now() + 60_000), include: ['events'], requestedBy: 'bench' });
      await prepareExport(deps, row.id); // the first round's issues the checkpoint
      let longest = 0;
      let last = performance.now();
      const probe = setInterval(() => {
        const now = performance.now();
        longest = Math.max(longest, now - last);
        last = now;
      }, 0);
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const n = await buildExportPart(deps, row.id, 'events');
      const cpu = process.cpuUsage(cpu0);
      clearInterval(probe);
      console.log(`round ${r}: ${n} events in ${(performance.now() - t0).toFixed(0)} ms, ${((cpu.user + cpu.system) / n).toFixed(1)} µs of this process's CPU per event, the event loop's longest wait ${longest.toFixed(1)} ms`);
    }
  } finally {
    await db.end();
    await dropDatabase(ADMIN_URL, name);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
