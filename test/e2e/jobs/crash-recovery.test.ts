/**
 * Jobs and faults: a worker dying mid-dispatch (SIGKILL) and the Temporal server restarting
 * mid-job. A job never reaches the provider twice: an attempt that does not report back is not
 * repeated. Killed mid-call, each job closes once `dispatch_interrupted` (its estimate settled);
 * across a Temporal restart the still-running attempts record their real outcome and every job
 * completes once. A job that opts in (`retry_on_interrupt`) is dispatched again instead: it
 * completes, and the provider saw its call twice.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmulator, type EmulatorHandle } from '../../../emulator/server';
import { freePort, startTemporalDevServer, type DevServer } from '../../../scripts/lib/temporal-dev-server';
import { createTestProject, http, startTestTollgate, type TestProject } from '../../support/tollgate';
import { waitUntil } from '../../support/wait';
import { emulatorEnv, say } from '../executions/helpers';
import { SOURCE_NODE_ARGS } from '../../../scripts/lib/source-node-args';
import { requestTimeline } from '../../../src/db/repositories/log-events';

jest.setTimeout(180_000);

type TG = Awaited<ReturnType<typeof startTestTollgate>>;

/** The job's request timeline (stored events and those derived from its call's record), as types. */
async function timelineTypes(db: TG['db'], j: { project_id: string; request_id: string }, only?: string[]): Promise<string[]> {
  const types = ((await requestTimeline(db, j.project_id, j.request_id)).events).map((e) => e.event_type);
  return only ? types.filter((t) => only.includes(t)) : types;
}

async function spawnTollgate(env: NodeJS.ProcessEnv, role: 'worker' | 'all'): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, path.join(__dirname, 'tollgate-process.ts')], {
    env: { ...process.env, TOLLGATE_TEST_ENV: JSON.stringify(env), TOLLGATE_TEST_ROLE: role },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      if (/ready /.test(String(d))) resolve();
    });
    child.once('exit', (code) => reject(new Error(`tollgate process exited ${code}`)));
  });
  return child;
}

async function submitMany(api: TG, p: TestProject, n: number, latencyMs: number, tag: string): Promise<string[]> {
  const call = http(api.url!);
  // At once: sent one after another, a stalled machine could let the first answer before the last is sent.
  const res = await Promise.all(
    Array.from({ length: n }, (_, i) => call('POST', '/v1/jobs', { key: p.clientKey, body: { operation: 'generate.text', messages: say(`[[emulator:latency_ms=${latencyMs}]] ${tag} ${i}`) } })),
  );
  for (const r of res) expect(r.status).toBe(202);
  return res.map((r) => r.json.id);
}

async function expectEachCompletedOnce(db: TG['db'], ids: string[]): Promise<any[]> {
  const jobs = await closedJobs(db, ids, 'completed');
  for (const j of jobs) {
    const ex = await db.query('SELECT count(*)::int AS n FROM calls WHERE id = $1', [j.request_id]);
    expect(ex.rows[0].n).toBe(1);
    const ev = await timelineTypes(db, j, ['job.completed', 'job.failed', 'request.completed', 'request.errored', 'usage.recorded']);
    expect(ev.sort()).toEqual(['job.completed', 'request.completed', 'usage.recorded']);
    expect(j.result.status).toBe('completed');
  }
  return jobs;
}

async function closedJobs(db: TG['db'], ids: string[], status: 'completed' | 'failed'): Promise<any[]> {
  let last: any[] = [];
  return waitUntil(async () => {
    const { rows } = await db.query('SELECT * FROM jobs WHERE id = ANY($1)', [ids]);
    last = rows;
    return rows.length === ids.length && rows.every((r) => r.status === status) ? rows : null;
  }, 120_000, 250).catch((err) => {
    // Say which jobs stalled and where, so a timeout in CI can be read without re-running it.
    throw new Error(`${err.message}: ${JSON.stringify(last.map((j) => ({ id: j.id, status: j.status, attempts: j.attempts, queued_at: j.queued_at, started_at: j.started_at, error_code: j.error_code, error: j.result?.error })))}`);
  });
}

describe('jobs and a worker killed mid-dispatch (SIGKILL)', () => {
  let emu: EmulatorHandle;
  let api: TG;
  let env: NodeJS.ProcessEnv;
  const children: ChildProcess[] = [];
  let survivor: TG | null = null;

  beforeAll(async () => {
    emu = await startEmulator({ port: 0 });
    // Dispatch deadline 30 s + 5 s: how long a lost attempt's own record is waited for.
    env = { ...emulatorEnv(emu.url), TEMPORAL_TASK_QUEUE: `jobs-crash-${Date.now()}`, JOBS_HEARTBEAT_TIMEOUT_MS: '2000', JOBS_RETRY_BASE_MS: '200', PROVIDER_TIMEOUT_MS: '30000' };
    api = await startTestTollgate({ env, role: 'api' });
  });
  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await survivor?.close();
    await api?.close();
    await emu?.close();
  });

  it('a job killed mid-call is not dispatched again: it closes once dispatch_interrupted on the next worker', async () => {
    const p = await createTestProject(api.db);
    children.push(await spawnTollgate(env, 'worker'));
    const before = emu.requestCount();
    const ids = await submitMany(api, p, 4, 25_000, 'killed');
    // All four are at the provider (it answers after 25 s) when the worker dies.
    await waitUntil(async () => emu.requestCount() - before >= 4, 30_000);
    children[0].kill('SIGKILL');
    survivor = await startTestTollgate({ env, role: 'worker' });
    const jobs = await closedJobs(api.db, ids, 'failed');
    expect(emu.requestCount() - before).toBe(4);
    for (const j of jobs) {
      expect(j.attempts).toBe(1);
      expect(j.error_code).toBe('dispatch_interrupted');
      expect(j.result.error.code).toBe('dispatch_interrupted');
      const ex = await api.db.query('SELECT count(*)::int AS n FROM calls WHERE id = $1', [j.request_id]);
      expect(ex.rows[0].n).toBe(1);
      expect(await timelineTypes(api.db, j, ['provider.request_sent'])).toHaveLength(1);
      expect((await timelineTypes(api.db, j, ['job.completed', 'job.failed', 'usage.recorded'])).sort()).toEqual(['job.failed', 'usage.recorded']);
      const permit = await api.db.query('SELECT reservation_state FROM permits WHERE id = $1', [j.permit_id]);
      expect(permit.rows[0].reservation_state).toBe('settled');
    }
  });
});

describe('jobs that opt in to retry_on_interrupt, and a worker killed mid-dispatch (SIGKILL)', () => {
  let emu: EmulatorHandle;
  let api: TG;
  let env: NodeJS.ProcessEnv;
  let child: ChildProcess | null = null;
  let survivor: TG | null = null;

  beforeAll(async () => {
    emu = await startEmulator({ port: 0 });
    // Dispatch deadline 15 s + 5 s: how long the default job waits for its lost attempt's own record.
    env = { ...emulatorEnv(emu.url), TEMPORAL_TASK_QUEUE: `jobs-retry-interrupt-${Date.now()}`, JOBS_HEARTBEAT_TIMEOUT_MS: '2000', JOBS_RETRY_BASE_MS: '200', PROVIDER_TIMEOUT_MS: '15000' };
    api = await startTestTollgate({ env, role: 'api' });
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await survivor?.close();
    await api?.close();
    await emu?.close();
  });

  /** Provider requests whose prompt carries `tag`. */
  const sentWith = (tag: string) => emu.received().filter((r) => JSON.stringify(r.body).includes(tag)).length;

  it('the opted-in job is dispatched again and completes (the provider saw it twice); the default one still ends dispatch_interrupted', async () => {
    const p = await createTestProject(api.db);
    child = await spawnTollgate(env, 'worker');
    const call = http(api.url!);
    const submit = (tag: string, extra: Record<string, unknown>) =>
      call('POST', '/v1/jobs', { key: p.clientKey, body: { operation: 'generate.text', messages: say(`[[emulator:latency_ms=8000]] ${tag}`), ...extra } });
    const [retried, plain] = await Promise.all([submit('opted-in', { retry_on_interrupt: true }), submit('default', {})]);
    expect([retried.status, plain.status]).toEqual([202, 202]);
    // Both are at the provider (it answers after 8 s) when the worker dies.
    await waitUntil(async () => sentWith('opted-in') >= 1 && sentWith('default') >= 1, 30_000);
    child.kill('SIGKILL');
    survivor = await startTestTollgate({ env, role: 'worker' });

    const [done] = await closedJobs(api.db, [retried.json.id], 'completed');
    expect(done.attempts).toBe(2);
    expect(done.result.status).toBe('completed');
    expect(sentWith('opted-in')).toBe(2);
    expect(await timelineTypes(api.db, done, ['provider.request_sent'])).toHaveLength(2);
    // One permit, one reservation, settled once; one call record.
    const permit = await api.db.query('SELECT reservation_state FROM permits WHERE id = $1', [done.permit_id]);
    expect(permit.rows[0].reservation_state).toBe('settled');
    const ex = await api.db.query('SELECT count(*)::int AS n FROM calls WHERE id = $1', [done.request_id]);
    expect(ex.rows[0].n).toBe(1);

    const [failed] = await closedJobs(api.db, [plain.json.id], 'failed');
    expect(failed.attempts).toBe(1);
    expect(failed.error_code).toBe('dispatch_interrupted');
    expect(sentWith('default')).toBe(1);

    expect((await submit('bad', { retry_on_interrupt: 'yes' })).json.error).toMatchObject({ code: 'validation_error', details: { issues: [expect.objectContaining({ path: 'retry_on_interrupt' })] } });
  });
});

describe('jobs across a Temporal server restart', () => {
  let emu: EmulatorHandle;
  let temporal: DevServer;
  let tg: TG;
  let port: number;
  let dbFile: string;

  beforeAll(async () => {
    emu = await startEmulator({ port: 0 });
    port = await freePort();
    dbFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-temporal-')), 'temporal.db');
    temporal = await startTemporalDevServer({ cli: process.env.TEMPORAL_CLI_PATH!, port, dbFile });
    tg = await startTestTollgate({ env: { ...emulatorEnv(emu.url), TEMPORAL_ADDRESS: temporal.address, JOBS_HEARTBEAT_TIMEOUT_MS: '3000', JOBS_RETRY_BASE_MS: '200' } });
  });
  afterAll(async () => {
    await tg?.close();
    await temporal?.stop();
    await emu?.close();
  });

  it('jobs dispatched before the restart and jobs queued around it all complete exactly once', async () => {
    const p = await createTestProject(tg.db);
    const before = emu.requestCount();
    const ids = await submitMany(tg, p, 3, 3000, 'restart');
    await waitUntil(async () => emu.requestCount() - before >= 3, 30_000);
    await temporal.stop();
    await new Promise((r) => setTimeout(r, 1000));
    temporal = await startTemporalDevServer({ cli: process.env.TEMPORAL_CLI_PATH!, port, dbFile });
    const more = await waitUntil(async () => {
      try {
        return await submitMany(tg, p, 2, 100, 'after');
      } catch {
        return null;
      }
    }, 60_000, 500);
    const jobs = await expectEachCompletedOnce(tg.db, [...ids, ...more]);
    // At most one provider call per attempt.
    const attempts = jobs.reduce((n, j) => n + j.attempts, 0);
    // One provider call per job: an attempt Temporal lost track of is not repeated.
    expect(emu.requestCount() - before).toBe(jobs.length);
    expect(attempts).toBeGreaterThanOrEqual(jobs.length);
  });
});
