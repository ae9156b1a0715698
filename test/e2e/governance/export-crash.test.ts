/**
 * A compliance export survives its worker dying mid-export (SIGKILL): the step that was running is
 * retried on the next worker after the heartbeat timeout, and the bundle verifies.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { appendEvents } from '../../../src/db/repositories/events';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import { readTar } from '../../../src/compliance/tar';
import { verifyExport } from '../../../src/compliance/verify-export';
import { complianceSigner } from '../../../src/integrity/keys';
import { issueCheckpoint } from '../../../src/integrity/log';
import { checkpointCovering } from '../../../src/db/repositories/integrity-log';
import { createTestProject, http, startTestTollgate } from '../../support/tollgate';
import { waitUntil } from '../../support/wait';
import { SOURCE_NODE_ARGS } from '../../../scripts/lib/source-node-args';

jest.setTimeout(240_000);

type TG = Awaited<ReturnType<typeof startTestTollgate>>;

async function spawnWorker(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, path.join(__dirname, '../jobs/tollgate-process.ts')], {
    env: { ...process.env, TOLLGATE_TEST_ENV: JSON.stringify(env), TOLLGATE_TEST_ROLE: 'worker' },
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

describe('compliance export and a worker killed mid-export (SIGKILL)', () => {
  let api: TG;
  let survivor: TG | null = null;
  let child: ChildProcess | null = null;
  const env = { TEMPORAL_TASK_QUEUE: `export-crash-${Date.now()}`, COMPLIANCE_EXPORT_HEARTBEAT_TIMEOUT_MS: '3000' };

  beforeAll(async () => {
    api = await startTestTollgate({ env, role: 'api' });
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await survivor?.close();
    await api?.close();
  });

  it('completes on the next worker and the bundle verifies', async () => {
    const p = await createTestProject(api.db);
    const total = 20_000;
    const at = new Date('2026-04-01T00:00:00Z');
    for (let i = 0; i < total; i += 4000) {
      await appendEvents(
        api.db,
        Array.from({ length: 4000 }, (_, k) => ({ projectId: p.project.id, eventType: 'permit.allowed', source: 'test', phase: 'permit', timestamp: at, metadata: { i: i + k, note: 'y'.repeat(200) } })),
      );
    }
    await chainAllProjectEvents(api.db, p.project.id);
    const signer = await complianceSigner(api.db, api.config);
    // Another test file's checkpoint workflow may issue it first (same database): either way, one covers the log.
    await waitUntil(async () => (await issueCheckpoint(api.db, signer, p.project.id)).issued ?? (await checkpointCovering(api.db, p.project.id, total)), 60_000, 100);

    const t0 = Date.now();
    const lap = (what: string) => process.env.EXPORT_CRASH_TIMINGS && console.log(`${what}: ${Date.now() - t0} ms`);
    lap('events written and checkpointed');
    child = await spawnWorker(env);
    const call = http(api.url!);
    const created = await call('POST', '/v1/compliance/exports', { key: p.adminKey, body: { window: { since: '2026-03-31T00:00:00Z', until: '2026-04-02T00:00:00Z' }, include: ['events'] } });
    expect(created.status).toBe(202);
    const get = async () => (await call('GET', `/v1/compliance/exports/${created.json.id}`, { key: p.adminKey })).json;
    // Progress is read with the worker frozen (SIGSTOP): a stalled test process cannot let it finish
    // the step between the read and the kill.
    const midway = await waitUntil(async () => {
      child!.kill('SIGSTOP');
      const e = await get();
      if (e.status === 'running' && e.progress.events_done > 0) return e;
      child!.kill('SIGCONT');
      return null;
    }, 60_000, 20);
    lap(`killed at events_done=${midway.progress.events_done}`);
    child.kill('SIGKILL');
    child = null;
    // The kill landed inside the events step (otherwise this test proves nothing).
    expect(midway.progress.events_done).toBeLessThan(total);
    expect((await get()).status).toBe('running');

    survivor = await startTestTollgate({ env, role: 'worker' });
    const done = await waitUntil(async () => {
      const e = await get();
      return ['completed', 'failed'].includes(e.status) ? e : null;
    }, 180_000, 250);
    lap('completed');
    expect(done).toMatchObject({ status: 'completed', progress: { events_done: total, events_total: total } });
    const dl = await fetch(`${api.url}/v1/compliance/exports/${created.json.id}/download`, { headers: { authorization: `Bearer ${p.adminKey}` } });
    const vkey = (await call('GET', '/v1/integrity/checkpoint-public-key')).json.note_verifier_key;
    const result = verifyExport(readTar(Buffer.from(await dl.arrayBuffer())), vkey);
    expect(result).toMatchObject({ ok: true, events_verified: total, failures: [] });
  });
});
