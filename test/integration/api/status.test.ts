import { startTestTollgate, createTestProject, http, TestProject } from '../../support/tollgate';
import { expectError } from '../../support/errors';

describe('status, metrics and request ids', () => {
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof http>;
  let p: TestProject;

  beforeAll(async () => {
    tg = await startTestTollgate();
    call = http(tg.url!);
    p = await createTestProject(tg.db);
  });
  afterAll(async () => tg?.close());

  it('reports PostgreSQL and Temporal ready without tenant data', async () => {
    const res = await call('GET', '/v1/public/status/summary');
    expect(res.status).toBe(200);
    expect(res.json.status).toBe('ready');
    expect(res.json.components).toEqual({ database: { status: 'ready' }, temporal: { status: 'ready' } });
    expect(res.json.providers.map((x: any) => x.provider)).toEqual(['openai', 'anthropic', 'google', 'deepseek', 'mistral']);
    expect(res.text).not.toContain(p.project.id);
  });

  it('serves Prometheus metrics labelled by route template and status', async () => {
    await call('GET', `/v1/projects/${p.project.id}`, { key: p.clientKey });
    const res = await call('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/tollgate_http_request_duration_seconds_count\{method="GET",route="\/v1\/projects\/:project_id",status="200"\} \d+/);
  });

  it('GET /metrics behind METRICS_TOKEN when configured, and closed in production without one', async () => {
    const guarded = await startTestTollgate({ env: { METRICS_TOKEN: 'metrics-secret-1' }, role: 'api' });
    const prod = await startTestTollgate({ env: { NODE_ENV: 'production', TOLLGATE_MASTER_KEY: Buffer.alloc(32, 3).toString('base64') }, role: 'api' });
    try {
      const g = http(guarded.url!);
      expectError(await g('GET', '/metrics'), 401, 'authentication_required');
      expectError(await g('GET', '/metrics', { headers: { authorization: 'Bearer metrics-secret-2' } }), 401, 'authentication_required');
      const ok = await g('GET', '/metrics', { headers: { authorization: 'Bearer metrics-secret-1' } });
      expect(ok.status).toBe(200);
      expect(ok.text).toContain('tollgate_http_request_duration_seconds');
      expectError(await http(prod.url!)('GET', '/metrics'), 403, 'metrics_token_required');
    } finally {
      await guarded.close();
      await prod.close();
    }
  });

  it('echoes a well-formed inbound x-request-id and replaces a bad one', async () => {
    const good = await call('GET', '/v1/public/status/summary', { headers: { 'x-request-id': 'abc-123' } });
    expect(good.headers.get('x-request-id')).toBe('abc-123');
    const bad = await call('GET', '/v1/public/status/summary', { headers: { 'x-request-id': 'has spaces <script>' } });
    expect(bad.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
  });
});
