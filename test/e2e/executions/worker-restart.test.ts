import { spawn } from 'node:child_process';
import path from 'node:path';
import { emulatorEnv, say } from './helpers';
import { startEmulator, EmulatorHandle } from '../../../src/emulator/server';
import { createTestProject, http, startTestTollgate, TestProject } from '../../support/tollgate';

jest.setTimeout(90_000);

async function waitFor<T>(fn: () => Promise<T | null | undefined | false>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('worker stops in the middle of an execution', () => {
  let emu: EmulatorHandle;
  beforeAll(async () => {
    emu = await startEmulator({ port: 0 });
  });
  afterAll(async () => emu?.close());

  async function counts(db: any, projectId: string, id: string) {
    const ev = await db.query('SELECT event_type, count(*)::int AS n FROM events WHERE project_id = $1 AND request_id = $2 GROUP BY event_type', [projectId, id]);
    const by = Object.fromEntries(ev.rows.map((r: any) => [r.event_type, r.n]));
    const ex = await db.query('SELECT count(*)::int AS n FROM executions WHERE id = $1', [id]);
    return { ...by, executions: ex.rows[0].n };
  }

  it('graceful stop during dispatch: another worker finishes it; completed once, usage and timeline recorded once', async () => {
    const env = { ...emulatorEnv(emu.url), TEMPORAL_TASK_QUEUE: `restart-${Date.now()}` };
    const api = await startTestTollgate({ env, role: 'api' });
    let w1 = await startTestTollgate({ env, role: 'worker' });
    let w2: Awaited<ReturnType<typeof startTestTollgate>> | null = null;
    try {
      const p: TestProject = await createTestProject(api.db);
      const pending = http(api.url!)('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('[[emulator:latency_ms=1500]] survive a restart') } });
      // The call is at the provider: stop that worker, start another on the same task queue.
      const sentRow = await waitFor(async () => (await api.db.query("SELECT request_id FROM events WHERE project_id = $1 AND event_type = 'provider.request_sent'", [p.project.id])).rows[0]);
      const closing = w1.close();
      w2 = await startTestTollgate({ env, role: 'worker' });
      await closing;
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ id: sentRow.request_id, status: 'completed' });
      expect(await counts(api.db, p.project.id, res.json.id)).toMatchObject({ 'provider.request_sent': 1, 'usage.recorded': 1, 'request.completed': 1, executions: 1 });
    } finally {
      await w2?.close();
      await w1.close();
      await api.close();
    }
  });

  it('worker killed (SIGKILL) during dispatch: the call is not repeated; the execution fails once with estimated usage', async () => {
    const queue = `kill-${Date.now()}`;
    const env = { ...emulatorEnv(emu.url), TEMPORAL_TASK_QUEUE: queue };
    process.env.TOLLGATE_DISPATCH_HEARTBEAT_MS = '2000';
    const api = await startTestTollgate({ env, role: 'api' });
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'worker-process.ts')], {
      env: { ...process.env, WORKER_ENV: JSON.stringify(env) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let w2: Awaited<ReturnType<typeof startTestTollgate>> | null = null;
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (d) => String(d).includes('ready') && resolve());
        child.once('exit', (code) => reject(new Error(`worker process exited ${code}`)));
      });
      const p: TestProject = await createTestProject(api.db);
      const pending = http(api.url!)('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('[[emulator:latency_ms=3000]] die mid-call') } });
      await waitFor(async () => (await api.db.query("SELECT 1 FROM events WHERE project_id = $1 AND event_type = 'provider.request_sent'", [p.project.id])).rowCount);
      child.kill('SIGKILL');
      w2 = await startTestTollgate({ env, role: 'worker' });
      const res = await pending;
      expect(res.status).toBe(502);
      expect(res.json).toMatchObject({ status: 'failed', status_code: 502, error: { code: 'dispatch_interrupted' } });
      expect(res.json.usage.estimated_final).toBe(true);
      expect(res.json.usage.input_tokens).toBeGreaterThan(0);
      expect(res.json.usage.output_tokens).toBe(0);
      expect(await counts(api.db, p.project.id, res.json.id)).toMatchObject({ 'provider.request_sent': 1, 'usage.recorded': 1, 'request.errored': 1, executions: 1 });
      const back = await http(api.url!)('GET', `/v1/executions/${res.json.id}`, { key: p.clientKey });
      expect(back.json).toEqual(res.json);
    } finally {
      delete process.env.TOLLGATE_DISPATCH_HEARTBEAT_MS;
      child.kill('SIGKILL');
      await w2?.close();
      await api.close();
    }
  });
});
