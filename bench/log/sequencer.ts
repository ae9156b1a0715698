/**
 * The sequencer's cost per chained entry (not a test): `npm run bench:log -- --sequencer`.
 *
 * Fills a throwaway database with the events of governed calls (the pipeline's `govern` and
 * `record` with a stub provider, C concurrent callers for BENCH_SECONDS, the sequencer off), then
 * chains all of them with `chainEvents` as the sequencer does and prints this process's CPU
 * and PostgreSQL's CPU per event, and the time of each of the sequencer's statements. The chaining
 * is measured alone: the load generator has stopped by then.
 *
 *   BENCH_SECONDS=3 C=32 npm run bench:log -- --sequencer
 *
 * Uses tollgate_bench_sequencer_<pid> on DATABASE_ADMIN_URL (default the local server), dropped afterwards.
 */
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { createProject } from '../../src/db/repositories/projects';
import { chainEvents } from '../../src/db/repositories/event-chain';
import { createDatabaseIfMissing, dropDatabase } from '../../scripts/lib/postgres';
import { postgresCpuMs } from '../lib/cpu';
import { governedCalls } from '../lib/governed-calls';

const ADMIN_URL = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONCURRENCY = Number(process.env.C ?? 32);

export async function run(): Promise<void> {
  const name = `tollgate_bench_sequencer_${process.pid}`;
  await createDatabaseIfMissing(ADMIN_URL, name);
  const url = ADMIN_URL.replace(/\/[^/?]*(\?|$)/, `/${name}$1`);
  const db = createPool(url, 20);
  try {
    await migrate(url);
    const project = await createProject(db, { name: 'bench', plan: 'enterprise' });
    const governedCall = governedCalls(db);
    let n = 0;
    const end = Date.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (Date.now() < end) {
          const t = await governedCall(project.id);
          if (t.decision !== 'allow') throw new Error(`not allowed: ${t.decision}`);
          n += 1;
        }
      }),
    );

    // Time each statement the sequencer sends (its connection's query, wrapped).
    const statements = new Map<string, number>();
    const connect = db.connect.bind(db);
    (db as unknown as { connect: () => Promise<unknown> }).connect = async () => {
      const client = (await connect()) as unknown as { query: (...a: unknown[]) => Promise<unknown> };
      const query = client.query.bind(client);
      client.query = async (...a: unknown[]) => {
        const t = performance.now();
        try {
          return await query(...a);
        } finally {
          const key = String(a[0]).replace(/\s+/g, ' ').trim().slice(0, 48);
          statements.set(key, (statements.get(key) ?? 0) + performance.now() - t);
        }
      };
      return client;
    };
    const pg0 = postgresCpuMs();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let events = 0;
    let rounds = 0;
    for (;;) {
      const r = await chainEvents(db, [project.id]);
      events += r.events;
      rounds += 1;
      if (r.fullProjects.length === 0) break;
    }
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const pgMs = postgresCpuMs() - pg0;
    const nodeMs = (cpu.user + cpu.system) / 1000;
    const us = (ms: number) => ((ms * 1000) / events).toFixed(1);
    console.log(`${n} calls (c=${CONCURRENCY}, ${SECONDS} s), ${events} events chained in ${rounds} rounds, ${wall.toFixed(0)} ms`);
    console.log(`per event: this process ${us(nodeMs)} µs CPU, PostgreSQL ${us(pgMs)} µs CPU; per call ${(nodeMs / n).toFixed(3)} + ${(pgMs / n).toFixed(3)} ms`);
    for (const [k, ms] of statements) console.log(`  ${ms.toFixed(0).padStart(6)} ms  ${k}`);
  } finally {
    await db.end();
    await dropDatabase(ADMIN_URL, name).catch(() => undefined);
  }
}
