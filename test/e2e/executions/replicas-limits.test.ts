/**
 * Two API processes on one PostgreSQL (this one in process, a second spawned): a hard cap, a
 * sliding-window rate limit and an Idempotency-Key hold across both, whichever process a call reaches.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { emulatorEnv, say } from './helpers';
import { startEmulator, EmulatorHandle } from '../../../emulator/server';
import { createTestProject, http, startTestTollgate } from '../../support/tollgate';
import { SOURCE_NODE_ARGS } from '../../../scripts/lib/source-node-args';

jest.setTimeout(120_000);

describe('two API processes share caps, rate limits and idempotency', () => {
  let emu: EmulatorHandle;
  let local: Awaited<ReturnType<typeof startTestTollgate>>;
  let child: ChildProcess;
  let remoteUrl: string;

  beforeAll(async () => {
    emu = await startEmulator({ port: 0 });
    const env = { ...emulatorEnv(emu.url), TEMPORAL_TASK_QUEUE: `replicas-${randomUUID()}` };
    local = await startTestTollgate({ env });
    child = spawn(process.execPath, [...SOURCE_NODE_ARGS, path.join(__dirname, 'api-process.ts')], {
      env: { ...process.env, TOLLGATE_TEST_ENV: JSON.stringify(env) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    remoteUrl = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (d) => {
        const m = /ready (\S+)/.exec(String(d));
        if (m) resolve(m[1]);
      });
      child.once('exit', (code) => reject(new Error(`api process exited ${code}`)));
    });
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await local?.close();
    await emu?.close();
  });

  it('a 1,500 µ$ daily cap: worst-case calls through both processes settle at most the cap', async () => {
    const p = await createTestProject(local.db);
    const admin = http(local.url!);
    expect((await admin('PATCH', `/v1/projects/${p.project.id}/policy`, { key: p.adminKey, body: { budgets: { daily_usd_micros: 1_500 } } })).status).toBe(200);
    const apis = [http(local.url!), http(remoteUrl)];
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        apis[i % 2]('POST', '/v1/executions', {
          key: p.clientKey,
          body: { operation: 'generate.text', messages: say(`[[emulator:fill_output=1,latency_ms=300]] ${i}`), parameters: { max_output_tokens: 10_000 } },
        }),
      ),
    );
    expect(results.every((r) => r.status === 200 || r.status === 403)).toBe(true);
    expect(results.filter((r) => r.status === 200).length).toBeGreaterThan(0);
    const { rows } = await local.db.query("SELECT reserved_micros, settled_micros FROM spend_counters WHERE project_id = $1 AND period_kind = 'day'", [p.project.id]);
    expect(Number(rows[0].reserved_micros)).toBe(0);
    expect(Number(rows[0].settled_micros)).toBeLessThanOrEqual(1_500);
  });

  it('4 requests per 30 s: a burst through both processes gets 4, the rest 429 with Retry-After', async () => {
    const p = await createTestProject(local.db);
    const admin = http(local.url!);
    const patch = { rate_limits: [{ id: 'r', metric: 'requests', limit: 4, window_seconds: 30, action: 'throttle' }] };
    expect((await admin('PATCH', `/v1/projects/${p.project.id}/policy`, { key: p.adminKey, body: patch })).status).toBe(200);
    const apis = [http(local.url!), http(remoteUrl)];
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) => apis[i % 2]('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say(`rate ${i}`) } })),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(4);
    const throttled = results.filter((r) => r.status === 429);
    expect(throttled).toHaveLength(12);
    for (const t of throttled) {
      const retry = Number(t.headers.get('retry-after'));
      expect(retry).toBeGreaterThanOrEqual(1);
      expect(retry).toBeLessThanOrEqual(30);
      expect(t.json.governance.reason).toBe('budget.rate_limit_throttled');
    }
  });

  it('one Idempotency-Key sent concurrently to both processes dispatches once; every answer is that execution', async () => {
    const p = await createTestProject(local.db);
    const apis = [http(local.url!), http(remoteUrl)];
    // 5 s at the provider: every duplicate arrives while the first is in flight, even on a stalled machine.
    const body = { operation: 'generate.text', messages: say('[[emulator:latency_ms=5000]] across processes') };
    const headers = { 'idempotency-key': `replicas-${randomUUID()}` };
    const before = emu.requestCount();
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => apis[i % 2]('POST', '/v1/executions', { key: p.clientKey, body, headers })));
    for (const r of results) expect(r.status).toBe(200);
    const ids = new Set(results.map((r) => r.json.id));
    expect(ids.size).toBe(1);
    // Counted at the provider, not only in our records.
    expect(emu.requestCount() - before).toBe(1);
    const ex = await local.db.query('SELECT count(*)::int AS n FROM calls WHERE project_id = $1 AND idempotency_key = $2', [p.project.id, headers['idempotency-key']]);
    expect(ex.rows[0].n).toBe(1);
    const permits = await local.db.query("SELECT count(*)::int AS n FROM permits WHERE project_id = $1 AND route = 'executions'", [p.project.id]);
    expect(permits.rows[0].n).toBe(1);
  });
});
