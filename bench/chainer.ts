/**
 * The event-chain sequencer's cost per event (not a test): `npm run bench:chainer`.
 *
 * Fills a throwaway database with the events of governed calls (the pipeline's `govern` and
 * `record` with a stub provider, C concurrent callers for BENCH_SECONDS, the sequencer off), then
 * chains all of them with `chainProjectEvents` as the sequencer does and prints this process's CPU
 * and PostgreSQL's CPU per event, and the time of each of the sequencer's statements. The chaining
 * is measured alone: the load generator has stopped by then.
 *
 *   BENCH_SECONDS=3 C=32 npm run bench:chainer
 *
 * Uses tollgate_bench_chainer_<pid> on DATABASE_ADMIN_URL (default the local server), dropped afterwards.
 */
import { createGovernedCallActivities } from '../activities/governed-call';
import { systemClock } from '../src/clock';
import { migrate } from '../src/db/migrate';
import { createPool } from '../src/db/pool';
import { createProject } from '../src/db/repositories/projects';
import { chainProjectEvents } from '../src/db/repositories/events';
import type { ExecutionInput } from '../src/executions/types';
import { createGovernance } from '../src/governance';
import { newId } from '../src/ids';
import { createLogger } from '../src/logger';
import { pricing } from '../src/pricing';
import type { ProviderGateway } from '../src/providers/types';
import { createDatabaseIfMissing, dropDatabase } from '../scripts/lib/postgres';
import { postgresCpuMs } from './lib/cpu';

const ADMIN_URL = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONCURRENCY = Number(process.env.C ?? 32);
const PROMPT = 'Summarise the benefits of unit tests in two sentences.';

async function main(): Promise<void> {
  const name = `tollgate_bench_chainer_${process.pid}`;
  await createDatabaseIfMissing(ADMIN_URL, name);
  const url = ADMIN_URL.replace(/\/[^/?]*(\?|$)/, `/${name}$1`);
  const db = createPool(url, 20);
  try {
    await migrate(url);
    const project = await createProject(db, { name: 'bench', plan: 'enterprise' });
    const providers: ProviderGateway = {
      dispatch: async () => ({
        output: { content: [{ type: 'text', role: 'assistant', text: 'Unit tests catch regressions early.' }] },
        output_assets: [],
        usage: { input_tokens: 12, output_tokens: 6, total_tokens: 18, metrics: [], estimated: false },
        finish_reason: 'stop',
      }),
    };
    const calls = createGovernedCallActivities({ db, clock: systemClock, logger: createLogger('warn'), governance: createGovernance({ db, clock: systemClock }), pricing, providers });
    let n = 0;
    const end = Date.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (Date.now() < end) {
          const input: ExecutionInput = {
            executionId: newId('exec_req'), permitId: newId('permit'), projectId: project.id, route: 'executions', mode: 'sync', createdAt: new Date().toISOString(),
            request: { operation: 'generate.text', messages: [{ role: 'user', content: PROMPT }] },
            routing: { requested_provider: 'openai', requested_model: 'gpt-4o-mini', reason_code: 'explicit_request', primary: { provider: 'openai', model: 'gpt-4o-mini' }, fallback: [] },
            workflowIntentId: null, idempotencyKey: null, dispatchTimeoutMs: 60_000, heartbeatTimeoutMs: 0,
          };
          const gov = await calls.govern({ input, request: { operation: 'generate.text', provider: 'openai', model: 'gpt-4o-mini', stream: false, messages: input.request.messages }, route: 'executions', inspectableText: [PROMPT], permitMetadata: {}, inProcess: {} });
          if (gov.decision !== 'allow') throw new Error(`not allowed: ${gov.reason_code}`);
          const { outcome } = await calls.dispatch(input);
          await calls.record(input, { kind: 'dispatched', gov, outcome });
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
      const r = await chainProjectEvents(db, project.id);
      events += r.events;
      rounds += 1;
      if (!r.full) break;
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

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
