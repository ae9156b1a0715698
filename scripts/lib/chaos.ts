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
 * A fifth of the calls join a workflow intent (X-Svc-Workflow-Id) whose max_calls the load passes,
 * so calls are taken from call leases while the processes holding them die and Temporal restarts.
 *
 * Afterwards, once jobs are terminal and the reconciliation window has passed: every call either
 * got an answer or has a closed record (no in-flight row, no reservation still held), no nonce was
 * dispatched twice (the emulator's request log), recorded dispatches match the emulator's count,
 * every event chain verifies, and the intent holds: no more allowed calls than max_calls, its
 * counter between the allowed calls joined to it and max_calls (a call taken from a lease whose
 * governance then failed for want of PostgreSQL is given back unless the lease already reported
 * it: then it counts, though no permit was written), and no call lease left outstanding.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import { Pool } from 'pg';
import { startEmulator, type EmulatorHandle } from '../../emulator/server';
import { migrate } from '../../src/db/migrate';
import { createProject } from '../../src/db/repositories/projects';
import { createApiKey } from '../../src/db/repositories/api-keys';
import { verifyEventChain } from '../../src/db/repositories/event-chain-verification';
import { freePort, startTemporalDevServer, type DevServer } from './temporal-dev-server';
import { findPgBin } from './postgres';
import { SOURCE_NODE_ARGS } from './source-node-args';
import { intentTemporalWorkflowId, stateQuery } from '../../workflows/intent-messages';

export const SCENARIOS = ['kill-api', 'kill-worker', 'restart-temporal', 'restart-postgres'] as const;
export type Scenario = (typeof SCENARIOS)[number];
type Kind = 'sync' | 'stream' | 'job' | 'intent';

/** The intent a fifth of the calls join; its ceiling is below what the load asks of it. */
const CHAOS_INTENT = 'chaos-intent';

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

interface CallResult {
  nonce: string;
  kind: Kind;
  scenario: Scenario;
  /** HTTP status, or null when the connection was refused or broke. */
  status: number | null;
  /** Why there was no status: the process was down (refused) or the connection broke mid-call. */
  failure?: 'refused' | 'broken';
  jobId?: string;
}

export interface ScenarioReport {
  scenario: Scenario;
  calls: number;
  answered: number;
  /** Connection refused while a process was down (no call was made). */
  refused: number;
  /** Connection broken mid-call: the caller saw no answer, the record must still close. */
  broken: number;
  byStatus: Record<string, number>;
  /** From the fault to the first sync call answered 200 (probing from the moment of the fault). */
  recoveryMs: number | null;
}

export interface ChaosReport {
  scenarios: ScenarioReport[];
  /** Accepted jobs and how they closed (`dispatch_interrupted` failures: an attempt lost mid-call). */
  jobs: { submitted: number; terminal: number; byStatus: Record<string, number> };
  /** Seconds from the end of load until no in-flight row and no held reservation remained (null: never within the limit). */
  settledAfterSeconds: number | null;
  inflightRowsLeft: number;
  reservationsHeld: number;
  /** Calls (sync, stream or job) the provider saw more than once: must be none. */
  doubleDispatches: string[];
  dispatchedByEmulator: number;
  recordedDispatches: number;
  chainOk: boolean;
  chainEvents: number;
  /** The intent joined by a fifth of the calls, read once everything settled. */
  intent: {
    maxCalls: number;
    /** Intent-joined calls answered 403 because the ceiling was reached. */
    refusedAtCeiling: number;
    /** Allowed permits joined to the intent: the calls it granted. */
    allowedPermits: number;
    /** The intent workflow's counter. */
    actualCalls: number;
    /** Call leases the workflow still counts as outstanding. */
    openLeases: number;
  };
}

const PG_USER = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];

function pgRun(cmd: string, args: string[]): void {
  const [bin, ...pre] = PG_USER.length ? [PG_USER[0], ...PG_USER.slice(1), cmd] : [cmd];
  const r = spawnSync(bin, [...pre, ...args], { stdio: 'pipe', encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
}

/** pgRun without blocking the event loop (the load goes on meanwhile). */
function pgRunAsync(cmd: string, args: string[]): Promise<void> {
  const [bin, ...pre] = PG_USER.length ? [PG_USER[0], ...PG_USER.slice(1), cmd] : [cmd];
  return new Promise((resolve, reject) => {
    const child = spawn(bin, [...pre, ...args], { stdio: 'ignore' });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}`))));
  });
}

/** A throwaway PostgreSQL cluster under `dir`, on `port`, restartable like a crash. */
async function privatePostgres(dir: string, port: number) {
  const initdb = findPgBin('initdb');
  const pgCtl = findPgBin('pg_ctl');
  if (!initdb || !pgCtl) throw new Error('the chaos suite needs initdb and pg_ctl (Debian: postgresql)');
  fs.mkdirSync(dir, { recursive: true });
  if (PG_USER.length) spawnSync('chown', ['-R', 'postgres', dir]);
  pgRun(initdb, ['-D', dir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  const opts = ['-D', dir, '-l', path.join(dir, 'server.log'), '-o', `-p ${port} -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=200`, '-w'];
  pgRun(pgCtl, [...opts, 'start']);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    crash: () => pgRunAsync(pgCtl, ['-D', dir, '-m', 'immediate', '-w', 'stop']),
    start: () => pgRunAsync(pgCtl, [...opts, 'start']),
    stop: () => pgRun(pgCtl, ['-D', dir, '-m', 'fast', '-w', 'stop']),
  };
}

class TollgateProcess {
  child: ChildProcess | null = null;
  constructor(
    private readonly role: 'api' | 'worker',
    private readonly env: NodeJS.ProcessEnv,
    private readonly logFile: string,
  ) {}

  /** Starts and resolves once the process logged that it started. */
  async start(): Promise<void> {
    const out = fs.createWriteStream(this.logFile, { flags: 'a' });
    // As `npm run dev` runs it; in a process group of its own, which kill() signals as a whole.
    const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, 'src/main.ts', '--role', this.role], { cwd: path.resolve(__dirname, '..', '..'), env: this.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      let seen = '';
      const timer = setTimeout(() => reject(new Error(`${this.role} did not start within 120 s; see ${this.logFile}`)), 120_000);
      const onData = (chunk: Buffer) => {
        out.write(chunk);
        seen = (seen + chunk.toString()).slice(-4000);
        if (seen.includes('tollgate started')) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', (c: Buffer) => out.write(c));
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${this.role} exited with ${code} while starting; see ${this.logFile}`));
      });
    }).finally(() => child.removeAllListeners('exit'));
    child.once('exit', () => out.end());
  }

  kill(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      child.once('exit', () => resolve());
      process.kill(-child.pid!, signal);
    });
  }
}

async function call(url: string, key: string, kind: Kind, nonce: string): Promise<{ status: number | null; failure?: 'refused' | 'broken'; jobId?: string }> {
  const text = `[[emulator:latency_ms=400]] chaos ${nonce}`;
  const body =
    kind === 'job'
      ? { operation: 'generate.text', messages: [{ role: 'user', content: text }] }
      : { operation: 'generate.text', messages: [{ role: 'user', content: text }], ...(kind === 'stream' ? { mode: 'stream' } : {}) };
  try {
    const res = await fetch(`${url}${kind === 'job' ? '/v1/jobs' : '/v1/executions'}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(kind === 'intent' ? { 'x-svc-workflow-id': CHAOS_INTENT } : {}) },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text(); // a stream is read to its end; a broken one throws here
    // A stream answered only if it ended with its completion (or an error event): a cut stream is no answer.
    if (kind === 'stream' && res.status === 200 && !/^event: (completion|error)$/m.test(text)) return { status: null, failure: 'broken' };
    const jobId = kind === 'job' && res.status === 202 ? (JSON.parse(text) as { id: string }).id : undefined;
    return { status: res.status, ...(jobId ? { jobId } : {}) };
  } catch (err) {
    const code = (err as { cause?: { code?: string } }).cause?.code;
    return { status: null, failure: code === 'ECONNREFUSED' ? 'refused' : 'broken' };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
    const intentMaxCalls = Math.max(4, Math.round((opts.concurrency * opts.loadMs * opts.scenarios.length) / 400 / 5 / 4));
    const declared = await fetch(`${url}/v1/workflows`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ workflow_id: CHAOS_INTENT, intent: { max_calls: intentMaxCalls } }),
    });
    if (declared.status !== 201) throw new Error(`declaring the chaos intent: ${declared.status} ${await declared.text()}`);
    log(`[chaos] up: api ${url}, temporal ${temporal.address}, postgres ${pg.url}; intent max_calls ${intentMaxCalls}`);

    const results: CallResult[] = [];
    const reports: ScenarioReport[] = [];
    let seq = 0;
    for (const scenario of opts.scenarios) {
      const startedAt = Date.now();
      let stopAt = startedAt + opts.loadMs;
      let faultAt = 0;
      let recoveredAt: number | null = null;
      const mine: CallResult[] = [];
      const caller = async (i: number) => {
        while (Date.now() < stopAt) {
          const n = seq++;
          const kind: Kind = n % 5 === 2 ? 'intent' : n % 5 === 3 ? 'stream' : n % 5 === 4 ? 'job' : 'sync';
          const nonce = `${scenario}-${n}-${i}`;
          const r = await call(url, key, kind, nonce);
          const res: CallResult = { nonce, kind, scenario, ...r };
          mine.push(res);
          if (r.status === null) await sleep(100);
        }
      };
      // Break, then (while the probe already calls) repair; recovery = fault to the first 200.
      const breakIt: Record<Scenario, () => Promise<void>> = {
        'kill-api': () => api.kill('SIGKILL'),
        'kill-worker': () => worker.kill('SIGKILL'),
        'restart-temporal': () => temporal.stop(),
        'restart-postgres': () => pg.crash(),
      };
      const repair: Record<Scenario, () => Promise<void>> = {
        'kill-api': () => sleep(500).then(() => api.start()),
        'kill-worker': () => sleep(500).then(() => worker.start()),
        'restart-temporal': async () => {
          temporal = await startTemporal();
        },
        'restart-postgres': () => pg.start(),
      };
      const fault = (async () => {
        await sleep(opts.loadMs / 3);
        faultAt = Date.now();
        log(`[chaos] ${scenario}`);
        await breakIt[scenario]();
        const repaired = repair[scenario]();
        for (let probe = 0; recoveredAt === null && Date.now() - faultAt < 120_000; probe++) {
          if ((await call(url, key, 'sync', `${scenario}-probe-${probe}`)).status === 200) recoveredAt = Date.now();
          else await sleep(100);
        }
        await repaired;
        stopAt = Math.max(stopAt, Date.now() + 1000);
      })();
      await Promise.all([fault, ...Array.from({ length: opts.concurrency }, (_, i) => caller(i))]);
      results.push(...mine);
      const byStatus: Record<string, number> = {};
      for (const r of mine) byStatus[String(r.status ?? r.failure)] = (byStatus[String(r.status ?? r.failure)] ?? 0) + 1;
      const report: ScenarioReport = {
        scenario,
        calls: mine.length,
        answered: mine.filter((r) => r.status !== null).length,
        refused: mine.filter((r) => r.failure === 'refused').length,
        broken: mine.filter((r) => r.failure === 'broken').length,
        byStatus,
        recoveryMs: recoveredAt === null ? null : recoveredAt - faultAt,
      };
      reports.push(report);
      log(`[chaos] ${scenario}: ${JSON.stringify(report)}`);
    }

    // Jobs: wait until every accepted job is terminal (they are durable: they finish after any fault).
    const jobIds = results.filter((r) => r.jobId).map((r) => r.jobId!);
    const jobStatus = new Map<string, string>();
    const jobsDeadline = Date.now() + 180_000;
    while (Date.now() < jobsDeadline && jobStatus.size < jobIds.length) {
      const { rows } = await db.query<{ id: string; status: string; error_code: string | null }>(
        "SELECT id, status, error_code FROM jobs WHERE id = ANY($1) AND status IN ('completed', 'failed', 'cancelled')",
        [jobIds],
      );
      for (const r of rows) jobStatus.set(r.id, r.error_code ? `${r.status} (${r.error_code})` : r.status);
      if (jobStatus.size < jobIds.length) await sleep(1000);
    }
    const jobsByStatus: Record<string, number> = {};
    for (const s of jobStatus.values()) jobsByStatus[s] = (jobsByStatus[s] ?? 0) + 1;

    // Reconciliation closes what dead processes left in flight (deadline + one 10 s round).
    const loadEnded = Date.now();
    let settledAfterSeconds: number | null = null;
    let inflightRowsLeft = -1;
    let reservationsHeld = -1;
    while (Date.now() - loadEnded < 120_000) {
      inflightRowsLeft = Number((await db.query('SELECT count(*) AS n FROM permits WHERE project_id = $1 AND closing IS NOT NULL', [project.id])).rows[0].n);
      reservationsHeld = Number((await db.query("SELECT count(*) AS n FROM permits WHERE project_id = $1 AND reservation_state = 'active'", [project.id])).rows[0].n);
      if (inflightRowsLeft === 0 && reservationsHeld === 0) {
        settledAfterSeconds = Math.round((Date.now() - loadEnded) / 1000);
        break;
      }
      await sleep(1000);
    }

    const counts = new Map<string, number>();
    for (const r of emu.received()) {
      const m = /chaos ([\w-]+)/.exec(JSON.stringify(r.body));
      if (m) counts.set(m[1], (counts.get(m[1]) ?? 0) + 1);
    }
    const kindOf = new Map(results.map((r) => [r.nonce, r.kind]));
    const doubleDispatches = [...counts].filter(([, n]) => n > 1).map(([nonce, n]) => `${nonce} (${kindOf.get(nonce) ?? 'probe'}) ×${n}`);
    // provider.request_sent as the timeline has it (src/executions/lifecycle-events.ts): stored rows; per
    // record, one per provider try (at least its first, for an interrupted call) plus one per later
    // job attempt, less the tries a job attempt began (its request_sent is the attempt's); one per
    // pipeline call in flight; one per started attempt of a job not yet recorded.
    const recordedDispatches = Number(
      (
        await db.query(
          `SELECT (SELECT count(*) FROM events WHERE project_id = $1 AND event_type = 'provider.request_sent')
                + (SELECT coalesce(sum(greatest(jsonb_array_length(lifecycle->'attempts'), 1)
                        + coalesce(jsonb_array_length(lifecycle->'job_attempts'), 0)
                        - (SELECT count(DISTINCT (j->>2)::int) FROM jsonb_array_elements(coalesce(lifecycle->'job_attempts', '[]'::jsonb)) j
                            WHERE (j->>2)::int BETWEEN 1 AND jsonb_array_length(lifecycle->'attempts') - 1)), 0)
                     FROM executions WHERE project_id = $1 AND lifecycle IS NOT NULL)
                + (SELECT count(*) FROM permits WHERE project_id = $1 AND closing IS NOT NULL)
                + (SELECT count(*) FROM jobs j, jsonb_object_keys(j.dispatch->'attempts') k
                    WHERE j.project_id = $1 AND j.dispatch IS NOT NULL AND NOT EXISTS (SELECT 1 FROM executions e WHERE e.id = j.request_id)) AS n`,
          [project.id],
        )
      ).rows[0].n,
    );
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
      jobs: { submitted: jobIds.length, terminal: jobStatus.size, byStatus: jobsByStatus },
      settledAfterSeconds,
      inflightRowsLeft,
      reservationsHeld,
      doubleDispatches,
      dispatchedByEmulator: [...counts.values()].reduce((a, b) => a + b, 0),
      recordedDispatches,
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

/** The report as the markdown table docs/reliability.md quotes. */
export function chaosMarkdown(r: ChaosReport): string {
  const lines = ['| scenario | calls | answered | refused (process down) | broken mid-call | statuses | recovery |', '|---|---|---|---|---|---|---|'];
  for (const s of r.scenarios) {
    lines.push(`| ${s.scenario} | ${s.calls} | ${s.answered} | ${s.refused} | ${s.broken} | ${Object.entries(s.byStatus).map(([k, v]) => `${k}: ${v}`).join(', ')} | ${s.recoveryMs === null ? '—' : `${(s.recoveryMs / 1000).toFixed(1)} s`} |`);
  }
  lines.push('');
  lines.push(`jobs: ${r.jobs.terminal}/${r.jobs.submitted} terminal ${JSON.stringify(r.jobs.byStatus)}; in-flight rows left ${r.inflightRowsLeft}, reservations held ${r.reservationsHeld} (settled ${r.settledAfterSeconds ?? 'never'} s after the load); double dispatches ${r.doubleDispatches.length}${r.doubleDispatches.length ? ` (${r.doubleDispatches.slice(0, 5).join(', ')})` : ''}; provider requests ${r.dispatchedByEmulator}, recorded dispatch starts ${r.recordedDispatches}; event chain ${r.chainOk ? 'verifies' : 'BROKEN'} (${r.chainEvents} events)`);
  lines.push(`intent: max_calls ${r.intent.maxCalls}, allowed calls ${r.intent.allowedPermits}, counter ${r.intent.actualCalls}, refused at the ceiling ${r.intent.refusedAtCeiling}, leases outstanding ${r.intent.openLeases}`);
  return lines.join('\n');
}

/** The suite's checks; empty when every one holds. */
export function chaosFailures(r: ChaosReport): string[] {
  const f: string[] = [];
  if (r.jobs.terminal < r.jobs.submitted) f.push(`${r.jobs.submitted - r.jobs.terminal} jobs never reached a terminal status`);
  if (r.inflightRowsLeft !== 0) f.push(`${r.inflightRowsLeft} in-flight rows left after the reconciliation window`);
  if (r.reservationsHeld !== 0) f.push(`${r.reservationsHeld} reservations still held after the reconciliation window`);
  if (r.doubleDispatches.length) f.push(`double dispatches: ${r.doubleDispatches.join(', ')}`);
  // The dispatch record is written before the call (with the permit), so a process that loses
  // PostgreSQL between the two leaves a record without a call (closed by reconciliation); the
  // reverse, a call without a record, must never happen.
  if (r.recordedDispatches < r.dispatchedByEmulator) f.push(`recorded dispatches ${r.recordedDispatches} < emulator ${r.dispatchedByEmulator}: a provider call without a record`);
  if (!r.chainOk) f.push('the event chain does not verify');
  if (r.intent.allowedPermits > r.intent.maxCalls) f.push(`intent: ${r.intent.allowedPermits} calls allowed over max_calls ${r.intent.maxCalls}`);
  // A call taken from a lease whose governance then failed (PostgreSQL down: a 503, no permit) still
  // counts against the intent: the counter may exceed the allowed calls, never max_calls.
  if (r.intent.actualCalls < r.intent.allowedPermits || r.intent.actualCalls > r.intent.maxCalls)
    f.push(`intent: counter ${r.intent.actualCalls} outside [${r.intent.allowedPermits} allowed calls, max_calls ${r.intent.maxCalls}]`);
  if (r.intent.openLeases !== 0) f.push(`intent: ${r.intent.openLeases} call leases still outstanding`);
  return f;
}
