/**
 * Workflow-intent call reservations benchmark (not a test): `npm run bench:intents`.
 *
 * Starts its own Temporal dev server and a throwaway PostgreSQL database (like the jest global
 * setup), one in-process Tollgate (API + worker), declares intents over HTTP and drives
 * `IntentReservations.reserveCall` — the call the API makes for every governed request with
 * X-Svc-Workflow-Id — from one API process:
 *
 *   1. ceiling: 1,000 concurrent reservations against one intent with max_calls 600 → exactly 600.
 *   2. throughput and latency: 100 concurrent callers, each reserving in a loop for BENCH_SECONDS
 *      (default 10) on one hot intent; reservations/s and p50/p99 latency.
 *
 * Targets: ≥ 500 reservations/s on one intent, p99 ≤ 50 ms, zero over-grants.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ensureTemporalCli } from '../scripts/lib/temporal-cli';
import { createDatabaseIfMissing, dropDatabase, ensurePostgres, withDatabase } from '../scripts/lib/postgres';
import { freePort, startTemporalDevServer } from '../scripts/lib/temporal-dev-server';
import { migrate } from '../src/db/migrate';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/logger';
import { startTollgate } from '../src/server';
import { createProject } from '../src/db/repositories/projects';
import { createApiKey } from '../src/db/repositories/api-keys';
import { IntentReservations } from '../src/temporal/intent-reservations';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CALLERS = Number(process.env.BENCH_CALLERS ?? 100);

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function main(): Promise<void> {
  const log = (m: string) => process.stdout.write(`${m}\n`);
  const dataDir = path.resolve(__dirname, '..', '.data');
  fs.mkdirSync(dataDir, { recursive: true });
  const cli = ensureTemporalCli(log);
  const serverUrl = await ensurePostgres(dataDir, log);
  const database = `tollgate_bench_${Date.now()}`;
  await createDatabaseIfMissing(serverUrl, database);
  const databaseUrl = withDatabase(serverUrl, database);
  await migrate(databaseUrl);
  const temporal = await startTemporalDevServer({ cli, port: await freePort(), logFile: fs.createWriteStream(path.join(dataDir, 'bench-temporal.log')) });
  const config = loadConfig({
    ...process.env,
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: `bench-intents-${Date.now()}`,
  });
  const tg = await startTollgate({ config, logger: createLogger('silent'), startMaintenance: false, temporalRetryMs: 10_000 });
  let failed = false;
  try {
    const project = await createProject(tg.db, { name: 'bench', plan: 'production' });
    const { key } = await createApiKey(tg.db, { projectId: project.id, scope: 'client' });
    const declare = async (workflow_id: string, max_calls: number) => {
      const res = await fetch(`${tg.url}/v1/workflows`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ workflow_id, intent: { max_calls } }),
      });
      if (res.status !== 201) throw new Error(`declare ${workflow_id}: ${res.status} ${await res.text()}`);
    };

    // 1. Ceiling under 1,000 concurrent reservations.
    await declare('bench-ceiling', 600);
    const r1 = new IntentReservations({ client: tg.temporal.client, db: tg.db });
    const t0 = performance.now();
    const outcomes = await Promise.all(Array.from({ length: 1000 }, () => r1.reserveCall(project.id, 'bench-ceiling')));
    const ceilingMs = performance.now() - t0;
    const granted = outcomes.filter((o) => o.granted).length;
    const denied = outcomes.filter((o) => !o.granted && o.reason === 'ceiling_reached').length;
    log(`ceiling: 1000 concurrent reservations, max_calls 600 → granted ${granted}, denied ceiling_reached ${denied}, ${ceilingMs.toFixed(0)} ms, ${r1.updatesSent} Updates`);
    if (granted !== 600) failed = true;

    // 2. Throughput and latency on one hot intent.
    await declare('bench-hot', 1_000_000_000);
    const r2 = new IntentReservations({ client: tg.temporal.client, db: tg.db });
    // Warm-up.
    await Promise.all(Array.from({ length: CALLERS }, () => r2.reserveCall(project.id, 'bench-hot')));
    const updatesBefore = r2.updatesSent;
    const latencies: number[] = [];
    let grantedHot = 0;
    const deadline = performance.now() + SECONDS * 1000;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: CALLERS }, async () => {
        while (performance.now() < deadline) {
          const s = performance.now();
          const o = await r2.reserveCall(project.id, 'bench-hot');
          latencies.push(performance.now() - s);
          if (o.granted) grantedHot++;
        }
      }),
    );
    const elapsed = (performance.now() - start) / 1000;
    latencies.sort((a, b) => a - b);
    const rate = latencies.length / elapsed;
    const p50 = pct(latencies, 50);
    const p99 = pct(latencies, 99);
    log(
      `hot intent: ${CALLERS} concurrent callers for ${elapsed.toFixed(1)} s → ${latencies.length} reservations (${grantedHot} granted), ` +
        `${rate.toFixed(0)} reservations/s, p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${latencies[latencies.length - 1].toFixed(1)} ms, ` +
        `${r2.updatesSent - updatesBefore} Updates (avg batch ${(latencies.length / Math.max(1, r2.updatesSent - updatesBefore)).toFixed(1)})`,
    );
    const state = await fetch(`${tg.url}/v1/workflows/bench-hot`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.json() as Promise<{ actual_calls: number }>);
    const expectedHot = grantedHot + CALLERS;
    log(`hot intent counter: ${state.actual_calls} (granted incl. warm-up ${expectedHot}) → ${state.actual_calls === expectedHot ? 'consistent' : 'MISMATCH'}`);
    if (state.actual_calls !== expectedHot) failed = true;
    log(`targets: ≥ 500 reservations/s ${rate >= 500 ? 'met' : 'MISSED'}; p99 ≤ 50 ms ${p99 <= 50 ? 'met' : 'MISSED'}; zero over-grants ${granted === 600 ? 'met' : 'MISSED'}`);
    if (rate < 500 || p99 > 50) failed = true;
  } finally {
    await tg.close();
    await temporal.stop();
    await dropDatabase(serverUrl, database).catch(() => undefined);
  }
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
