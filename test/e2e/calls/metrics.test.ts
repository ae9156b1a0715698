import { createApiKey } from '../../../src/db/repositories/api-keys';
import { startHarness, Harness, say } from '../executions/helpers';
import type { TestProject } from '../../support/tollgate';

describe('GET /v1/metrics/calls (the Overview aggregates)', () => {
  let h: Harness;
  let p: TestProject;
  let other: TestProject;
  let secondKey: { id: string; key: string };
  let from: string;
  let to: string;

  beforeAll(async () => {
    h = await startHarness();
    p = await h.project();
    other = await h.project();
    const k = await createApiKey(h.tg.db, { projectId: p.project.id, scope: 'client' });
    secondKey = { id: k.record.id, key: k.key };
    const exec = (body: unknown, key = p.clientKey, headers: Record<string, string> = {}) => h.call('POST', '/v1/executions', { key, body, headers });
    from = new Date(Date.now() - 60_000).toISOString();
    const openai = { provider: 'openai', model: 'gpt-4o-mini' };
    expect((await exec({ operation: 'generate.text', messages: say('one'), routing: openai })).status).toBe(200);
    expect((await exec({ operation: 'generate.text', messages: say('two'), routing: openai })).status).toBe(200);
    const anthropic = { provider: 'anthropic', model: 'claude-sonnet-4-5' };
    expect((await exec({ operation: 'generate.text', messages: say('three'), routing: anthropic }, secondKey.key)).status).toBe(200);
    const failed = await exec({ operation: 'generate.text', messages: say('[[emulator:status=400]] broken'), routing: openai });
    expect(failed.json.status).toBe('failed');
    const denied = await exec({ operation: 'generate.text', messages: say('joined') }, p.clientKey, { 'x-svc-workflow-id': 'never-declared' });
    expect(denied.status).toBe(403);
    // Another project's call, which no read of this project may count.
    expect((await exec({ operation: 'generate.text', messages: say('elsewhere') }, other.clientKey)).status).toBe(200);
    to = new Date(Date.now() + 60_000).toISOString();
  });
  afterAll(async () => h?.close());

  const metrics = (query: string, key = p.clientKey) => h.call('GET', `/v1/metrics/calls${query}`, { key });
  const window = (f = from, t = to, bucket = 60) => `?from=${encodeURIComponent(f)}&to=${encodeURIComponent(t)}&bucket_seconds=${bucket}`;

  it('counts the calls by status, per bucket and in total, with the rates', async () => {
    const res = await metrics(window());
    expect(res.status).toBe(200);
    const m = res.json;
    expect(m.object).toBe('call_metrics');
    expect(m.window).toEqual({ from: new Date(from).toISOString(), to: new Date(to).toISOString(), bucket_seconds: 60 });
    expect(m.totals).toMatchObject({ calls: 5, completed: 3, failed: 1, denied: 1, error_rate: 0.2, denial_rate: 0.2 });
    expect(m.totals.p50_ms).toEqual(expect.any(Number));
    expect(m.totals.p95_ms).toBeGreaterThanOrEqual(m.totals.p50_ms);
    // Every bucket of the window, in order, one bucket_seconds apart.
    expect(m.series).toHaveLength(Math.ceil((Date.parse(to) - Date.parse(from)) / 60_000));
    m.series.forEach((b: any, i: number) => expect(Date.parse(b.start)).toBe(Date.parse(from) + i * 60_000));
    const sum = (k: string) => m.series.reduce((n: number, b: any) => n + b[k], 0);
    expect({ completed: sum('completed'), failed: sum('failed'), denied: sum('denied') }).toEqual({ completed: 3, failed: 1, denied: 1 });
    for (const b of m.series) if (b.completed + b.failed === 0) expect(b.p50_ms).toBeNull();
  });

  it('splits spend by model and by key, summing to the costs the request log shows', async () => {
    const calls = (await h.call('GET', '/v1/calls', { key: p.clientKey })).json.data as any[];
    expect(calls).toHaveLength(5);
    const m = (await metrics(window())).json;
    const total = calls.reduce((n, c) => n + c.usage.cost_usd_micros, 0);
    expect(total).toBeGreaterThan(0);
    expect(m.totals.cost_usd_micros).toBe(total);
    const group = (keyOf: (c: any) => string) => {
      const g: Record<string, { calls: number; cost_usd_micros: number }> = {};
      for (const c of calls) {
        const k = keyOf(c);
        g[k] ??= { calls: 0, cost_usd_micros: 0 };
        g[k].calls += 1;
        g[k].cost_usd_micros += c.usage.cost_usd_micros;
      }
      return g;
    };
    const byModel = group((c) => `${c.provider}/${c.model}`);
    expect(Object.fromEntries(m.by_model.map((r: any) => [`${r.provider}/${r.model}`, { calls: r.calls, cost_usd_micros: r.cost_usd_micros }]))).toEqual(byModel);
    expect(Object.keys(byModel).sort()).toEqual(['anthropic/claude-sonnet-4-5', 'openai/gpt-4o-mini']);
    const byKey = group((c) => c.key_id);
    expect(Object.fromEntries(m.by_key.map((r: any) => [r.key_id, { calls: r.calls, cost_usd_micros: r.cost_usd_micros }]))).toEqual(byKey);
    expect(byKey[secondKey.id].calls).toBe(1);
    expect(Object.keys(byKey)).toHaveLength(2);
  });

  it('answers a window without calls with zeros', async () => {
    const m = (await metrics(window('2000-01-01T00:00:00Z', '2000-01-01T01:00:00Z', 300))).json;
    expect(m.totals).toEqual({ calls: 0, completed: 0, failed: 0, denied: 0, error_rate: 0, denial_rate: 0, p50_ms: null, p95_ms: null, cost_usd_micros: 0 });
    expect(m.series).toHaveLength(12);
    for (const b of m.series) expect(b).toMatchObject({ completed: 0, failed: 0, denied: 0, p50_ms: null, p95_ms: null });
    expect(m.by_model).toEqual([]);
    expect(m.by_key).toEqual([]);
  });

  it('defaults to the last hour in minutes', async () => {
    const m = (await metrics('')).json;
    expect(m.window.bucket_seconds).toBe(60);
    expect(Date.parse(m.window.to) - Date.parse(m.window.from)).toBe(3600_000);
    expect(m.series).toHaveLength(60);
    expect(m.totals.calls).toBe(5);
  });

  it('answers bad parameters with a 400 naming the parameter', async () => {
    const cases: [string, string][] = [
      ['?from=yesterday', 'query.from'],
      ['?to=soon', 'query.to'],
      ['?bucket_seconds=0', 'query.bucket_seconds'],
      ['?bucket_seconds=ten', 'query.bucket_seconds'],
      [window('2026-01-02T00:00:00Z', '2026-01-01T00:00:00Z'), 'query.from'],
      [window('2026-01-01T00:00:00Z', '2026-02-02T00:00:00Z', 86400), 'query.from'],
      // A day in minutes is 1440 buckets, past the limit.
      [window('2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z', 60), 'query.bucket_seconds'],
      ['?colour=blue', 'query'],
    ];
    for (const [query, path] of cases) {
      const res = await metrics(query);
      expect([query, res.status]).toEqual([query, 400]);
      expect(res.json.error.code).toBe('validation_error');
      expect(res.json.error.details.issues.map((i: any) => i.path).join(' ')).toContain(path);
    }
    expect((await metrics(window('2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z', 300))).status).toBe(200);
  });

  it("keeps projects apart: another project's key sees only its own call", async () => {
    const m = (await metrics(window(), other.clientKey)).json;
    expect(m.totals).toMatchObject({ calls: 1, completed: 1, failed: 0, denied: 0 });
    expect(m.by_key.map((r: any) => r.key_id)).not.toContain(secondKey.id);
    expect((await h.call('GET', '/v1/metrics/calls')).status).toBe(401);
  });
});
