/**
 * The fault suite behind `npm run chaos` (and its short version in test/chaos): a Tollgate API
 * process and a worker process on a private PostgreSQL cluster and a Temporal dev server with its
 * state on disk, the provider emulator in this process, and load — sync calls, streams and jobs,
 * each carrying a nonce and 400 ms of emulated provider latency so that calls are in flight when a
 * fault lands. One fault per scenario, under load:
 *
 *   kill-api          SIGKILL the API process, start a new one on the same port
 *   kill-worker       SIGKILL the worker process, start a new one
 *   restart-temporal  stop the Temporal dev server, start it again on the same state file
 *   restart-postgres  `pg_ctl restart -m immediate` (a crash: recovery on start)
 *
 * A fifth of the calls join an intent (X-Svc-Workflow-Id) whose max_calls the load passes,
 * so calls are taken from call leases while the processes holding them die and Temporal restarts.
 *
 * Afterwards, once jobs are terminal and the reconciliation window has passed: every call either
 * got an answer or has a closed record (no in-flight row, no reservation still held), no nonce was
 * dispatched twice (the emulator's request log), recorded dispatches match the emulator's count,
 * every event chain verifies, and the intent holds: no more allowed calls than max_calls, its
 * counter between the allowed calls joined to it and max_calls (a call taken from a lease whose
 * governance then failed for want of PostgreSQL is given back, as returned if the lease already
 * reported it, also after its lease closed; only one whose report failed still counts, though no
 * permit was written), and no call lease left outstanding.
 *
 * The parts: chaos-processes.ts (what is broken), chaos-scenario.ts (one fault under load),
 * chaos-aftermath.ts (what is read afterwards), chaos-report.ts (the figures and the checks).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import { Pool } from 'pg';
import { startEmulator, type EmulatorHandle } from '../../emulator/server';
import { migrate } from '../../src/db/migrate';
import { createProject } from '../../src/db/repositories/projects';
import { createApiKey } from '../../src/db/repositories/api-keys';
import { verifyEventChain } from '../../src/db/repositories/event-chain-verification';
import { intentTemporalWorkflowId, stateQuery } from '../../workflows/intent-messages';
import { awaitJobs, awaitSettled, emulatorDispatches, recordedDispatches } from './chaos-aftermath';
import { privatePostgres, TollgateProcess } from './chaos-processes';
import type { ChaosReport } from './chaos-report';
import { CHAOS_INTENT, runScenario, sleep, type CallResult, type Fault, type Scenario, type ScenarioReport } from './chaos-scenario';
import { freePort, startTemporalDevServer, type DevServer } from './temporal-dev-server';

export interface ChaosOptions {
  scenarios: readonly Scenario[];
  /** Concurrent callers. */
  concurrency: number;
  /** Load per scenario; the fault lands after a third of it. */
  loadMs: number;
  /** Temporal CLI binary. */
  cli: string;
  /** Prebuilt workflow bundle (faster worker starts); bundled at start when absent. */
  bundlePath?: string;
  /** Scratch directory (PostgreSQL cluster, Temporal state, process logs). */
  dir: string;
  log: (msg: string) => void;
}

export async function runChaos(opts: ChaosOptions): Promise<ChaosReport> {
  const { log } = opts;
  fs.rmSync(opts.dir, { recursive: true, force: true });
  fs.mkdirSync(opts.dir, { recursive: true });
  const pg = await privatePostgres(path.join(opts.dir, 'pg'), await freePort());
  const databaseUrl = pg.url.replace(/\/postgres$/, '/tollgate_chaos');
  const admin = new Pool({ connectionString: pg.url, max: 1 });
  await admin.query('CREATE DATABASE tollgate_chaos');
  await admin.end();
  await migrate(databaseUrl);
  const temporalPort = await freePort();
  const temporalDb = path.join(opts.dir, 'temporal.db');
  const startTemporal = () => startTemporalDevServer({ cli: opts.cli, port: temporalPort, dbFile: temporalDb, logFile: fs.createWriteStream(path.join(opts.dir, 'temporal.log'), { flags: 'a' }) });
  let temporal: DevServer = await startTemporal();
  const emu: EmulatorHandle = await startEmulator({ port: 0 });
  const apiPort = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'development',
    PORT: String(apiPort),
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: 'tollgate-chaos',
    LOG_LEVEL: 'info',
    PROVIDER_TIMEOUT_MS: '5000',
    ...(opts.bundlePath ? { TEMPORAL_WORKFLOW_BUNDLE: opts.bundlePath } : {}),
    OPENAI_BASE_URL: `${emu.url}/openai`,
    OPENAI_API_KEY: 'chaos-openai',
    ANTHROPIC_BASE_URL: `${emu.url}/anthropic`,
    ANTHROPIC_API_KEY: 'chaos-anthropic',
    GEMINI_BASE_URL: `${emu.url}/google`,
    GEMINI_API_KEY: 'chaos-gemini',
    DEEPSEEK_BASE_URL: `${emu.url}/deepseek`,
    DEEPSEEK_API_KEY: 'chaos-deepseek',
    MISTRAL_BASE_URL: `${emu.url}/mistral`,
    MISTRAL_API_KEY: 'chaos-mistral',
  };
  const api = new TollgateProcess('api', env, path.join(opts.dir, 'api.log'));
  const worker = new TollgateProcess('worker', env, path.join(opts.dir, 'worker.log'));
  const db = new Pool({ connectionString: databaseUrl, max: 4 });
  // A PostgreSQL restart drops clients, idle or checked out.
  db.on('error', () => undefined);
  db.on('connect', (c) => c.on('error', () => undefined));
  try {
    await Promise.all([api.start(), worker.start()]);
    const url = `http://127.0.0.1:${apiPort}`;
    const project = await createProject(db, { name: 'chaos', plan: 'production' });
    const key = (await createApiKey(db, { projectId: project.id, scope: 'client', name: 'chaos' })).key;
    // A fifth of the calls join the intent; its ceiling is an eighth of what they would be at a
    // call every 400 ms per caller, so a machine answering at a quarter of that rate still passes it.
    const intentMaxCalls = Math.max(3, Math.round((opts.concurrency * opts.loadMs * opts.scenarios.length) / 400 / 5 / 8));
    const declared = await fetch(`${url}/v1/workflows`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ workflow_id: CHAOS_INTENT, intent: { max_calls: intentMaxCalls } }),
    });
    if (declared.status !== 201) throw new Error(`declaring the chaos intent: ${declared.status} ${await declared.text()}`);
    log(`[chaos] up: api ${url}, temporal ${temporal.address}, postgres ${pg.url}; intent max_calls ${intentMaxCalls}`);

    const results: CallResult[] = [];
    const reports: ScenarioReport[] = [];
    const seq = { next: 0 };
    const faults: Record<Scenario, Fault> = {
      'kill-api': { inject: () => api.kill('SIGKILL'), repair: () => sleep(500).then(() => api.start()) },
      'kill-worker': { inject: () => worker.kill('SIGKILL'), repair: () => sleep(500).then(() => worker.start()) },
      'restart-temporal': {
        inject: () => temporal.stop(),
        repair: async () => {
          temporal = await startTemporal();
        },
      },
      'restart-postgres': { inject: () => pg.crash(), repair: () => pg.start() },
    };
    for (const scenario of opts.scenarios) {
      const ran = await runScenario(scenario, faults[scenario], { url, key, concurrency: opts.concurrency, loadMs: opts.loadMs, log }, seq);
      results.push(...ran.results);
      reports.push(ran.report);
    }

    const jobs = await awaitJobs(db, results.filter((r) => r.jobId).map((r) => r.jobId!));
    const settled = await awaitSettled(db, project.id);
    const dispatched = emulatorDispatches(emu, results);
    const recorded = await recordedDispatches(db, project.id);
    const chain = await verifyEventChain(db, project.id);
    const allowedPermits = Number(
      (await db.query("SELECT count(*) AS n FROM permits WHERE project_id = $1 AND workflow_id = $2 AND decision = 'allow'", [project.id, CHAOS_INTENT])).rows[0].n,
    );
    const connection = await Connection.connect({ address: temporal.address });
    let state;
    try {
      state = await new TemporalClient({ connection }).workflow.getHandle(intentTemporalWorkflowId(project.id, CHAOS_INTENT)).query(stateQuery);
    } finally {
      await connection.close();
    }
    return {
      scenarios: reports,
      jobs,
      ...settled,
      ...dispatched,
      recordedDispatches: recorded,
      chainOk: chain.ok,
      chainEvents: chain.count,
      intent: {
        maxCalls: intentMaxCalls,
        refusedAtCeiling: results.filter((r) => r.kind === 'intent' && r.status === 403).length,
        allowedPermits,
        actualCalls: state.actualCalls,
        openLeases: Object.keys(state.leases ?? {}).length,
      },
    };
  } finally {
    await Promise.all([api.kill('SIGTERM'), worker.kill('SIGTERM')]);
    await db.end().catch(() => undefined);
    await emu.close();
    await temporal.stop();
    try {
      pg.stop();
    } catch {
      // already down
    }
  }
}
