/**
 * What a signed checkpoint costs Tollgate's process per event (not a test): `npm run bench:checkpoint`.
 *
 * A checkpoint (src/integrity/log.ts) reads every chain row since the last one, checks its links,
 * builds the project's Merkle tree from the leaf hashes the sequencer stored and stores the tree's
 * new nodes.
 * It runs in the API process unless the worker runs apart, every 30 s, so its CPU per event is part
 * of what a governed call costs (eight events a call). On a throwaway database: a warm-up
 * checkpoint of 5,000 events, then BENCH_ROUNDS (default 3) rounds of BENCH_EVENTS (default
 * 20,000) events appended, chained and checkpointed; each round prints the checkpoint's wall time,
 * this process's CPU per event and the longest the event loop waited meanwhile (a 0 ms interval
 * timer's largest gap).
 */
import { createDatabaseIfMissing, dropDatabase, withDatabase } from '../scripts/lib/postgres';
import { migrate } from '../src/db/migrate';
import { createPool, type Db } from '../src/db/pool';
import { appendEvents, chainAllProjectEvents } from '../src/db/repositories/events';
import { createProject } from '../src/db/repositories/projects';
import { complianceSigner } from '../src/integrity/keys';
import { issueCheckpoint } from '../src/integrity/log';

const ADMIN_URL = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/** Events shaped as a governed call's (its ids, provider, model and metadata), 500 per statement. */
async function grow(db: Db, projectId: string, n: number): Promise<void> {
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

async function main(): Promise<void> {
  const name = `tollgate_bench_checkpoint_${process.pid}`;
  await createDatabaseIfMissing(ADMIN_URL, name);
  const url = withDatabase(ADMIN_URL, name);
  const db = createPool(url, 4);
  try {
    await migrate(url);
    const project = await createProject(db, { name: 'bench checkpoint', plan: 'production' });
    const signer = await complianceSigner(db, { env: 'test', masterKey: undefined, databaseUrl: url });
    await grow(db, project.id, 5_000);
    await issueCheckpoint(db, signer, project.id);
    for (let r = 1; r <= ROUNDS; r++) {
      await grow(db, project.id, EVENTS);
      let longest = 0;
      let last = performance.now();
      const probe = setInterval(() => {
        const now = performance.now();
        longest = Math.max(longest, now - last);
        last = now;
      }, 0);
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const out = await issueCheckpoint(db, signer, project.id);
      const cpu = process.cpuUsage(cpu0);
      clearInterval(probe);
      const us = (cpu.user + cpu.system) / EVENTS;
      console.log(
        `round ${r}: checkpoint to ${out.issued?.tree_size} events, ${EVENTS} new: ${(performance.now() - t0).toFixed(0)} ms, ${us.toFixed(1)} µs of this process's CPU per event, the event loop's longest wait ${longest.toFixed(1)} ms`,
      );
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
