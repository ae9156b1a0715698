import { startTestTollgate, createTestProject, http, TestProject } from '../support/tollgate';
import { revokeApiKey, findApiKeyByKey } from '../../src/db/repositories/api-keys';
import { waitUntil } from '../support/wait';

describe('foundation: auth, error contract, status', () => {
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof http>;
  let p: TestProject;

  beforeAll(async () => {
    tg = await startTestTollgate();
    call = http(tg.url!);
    p = await createTestProject(tg.db);
  });
  afterAll(async () => tg?.close());

  const expectError = (res: { status: number; json: any; headers: Headers }, status: number, code: string) => {
    expect(res.status).toBe(status);
    expect(res.json).toEqual({ error: { code, message: expect.any(String), details: expect.any(Object) } });
    expect(res.headers.get('x-request-id')).toBeTruthy();
  };

  describe('status', () => {
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

  describe('authentication', () => {
    it('401 authentication_required without a key', async () => {
      const res = await call('GET', `/v1/projects/${p.project.id}`);
      expectError(res, 401, 'authentication_required');
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    });

    it('401 malformed_authorization for a non-Bearer header', async () => {
      const res = await call('GET', `/v1/projects/${p.project.id}`, { headers: { authorization: `Basic ${p.clientKey}` } });
      expectError(res, 401, 'malformed_authorization');
    });

    it('401 invalid_api_key for an unknown key', async () => {
      const res = await call('GET', `/v1/projects/${p.project.id}`, { key: 'tg_client_' + 'x'.repeat(40) });
      expectError(res, 401, 'invalid_api_key');
    });

    it('resolves the project from the key; another project is a 404', async () => {
      const ok = await call('GET', `/v1/projects/${p.project.id}`, { key: p.clientKey });
      expect(ok.status).toBe(200);
      expect(ok.json).toMatchObject({ id: p.project.id, object: 'project', plan: 'production' });
      const other = await createTestProject(tg.db);
      expectError(await call('GET', `/v1/projects/${other.project.id}`, { key: p.clientKey }), 404, 'not_found');
    });

    it('403 insufficient_scope for a client key on an admin route', async () => {
      const res = await call('GET', `/v1/projects/${p.project.id}/api-keys`, { key: p.clientKey });
      expectError(res, 403, 'insufficient_scope');
      expect(res.json.error.details).toEqual({ required_scope: 'admin', key_scope: 'client' });
    });

    it('creates a key shown once, stores only its hash, and rejects it after revocation', async () => {
      const created = await call('POST', `/v1/projects/${p.project.id}/api-keys`, { key: p.adminKey, body: { scope: 'client', name: 'ci' } });
      expect(created.status).toBe(201);
      expect(created.json.key).toMatch(/^tg_client_[0-9A-Za-z]{40}$/);
      const listed = await call('GET', `/v1/projects/${p.project.id}/api-keys`, { key: p.adminKey });
      expect(listed.text).not.toContain(created.json.key);
      const stored = await tg.db.query('SELECT key_hash FROM api_keys WHERE id = $1', [created.json.id]);
      expect(stored.rows[0].key_hash).toHaveLength(32);
      expect(JSON.stringify(stored.rows)).not.toContain(created.json.key);

      expect((await call('GET', `/v1/projects/${p.project.id}`, { key: created.json.key })).status).toBe(200);
      const revoked = await call('POST', `/v1/projects/${p.project.id}/api-keys/${created.json.id}/revoke`, { key: p.adminKey });
      expect(revoked.status).toBe(200);
      expect(revoked.json.revoked_at).toEqual(expect.any(String));
      expectError(await call('GET', `/v1/projects/${p.project.id}`, { key: created.json.key }), 401, 'api_key_revoked');
    });

    it('a key revoked directly in the database after it was cached is refused once the notice arrives', async () => {
      const q = await createTestProject(tg.db);
      expect((await call('GET', `/v1/projects/${q.project.id}`, { key: q.clientKey })).status).toBe(200);
      const rec = await findApiKeyByKey(tg.db, q.clientKey);
      await revokeApiKey(tg.db, rec!.id);
      // The cache of this process drops the project on tollgate_auth_changes (src/db/notice-listener.ts).
      await waitUntil(async () => (await call('GET', `/v1/projects/${q.project.id}`, { key: q.clientKey })).status === 401, 5_000, 50);
    });

    it('rejects a key revoked directly in the database', async () => {
      const q = await createTestProject(tg.db);
      const rec = await findApiKeyByKey(tg.db, q.clientKey);
      await revokeApiKey(tg.db, rec!.id);
      expectError(await call('GET', `/v1/projects/${q.project.id}`, { key: q.clientKey }), 401, 'api_key_revoked');
    });
  });

  describe('error contract', () => {
    const path = () => `/v1/projects/${p.project.id}/api-keys`;

    it('400 invalid_json for malformed JSON', async () => {
      expectError(
        await call('POST', path(), { key: p.adminKey, rawBody: '{"scope": ', headers: { 'content-type': 'application/json' } }),
        400,
        'invalid_json',
      );
    });

    it('415 unsupported_media_type for a non-JSON body', async () => {
      const res = await call('POST', path(), { key: p.adminKey, rawBody: 'scope=client', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expectError(res, 415, 'unsupported_media_type');
    });

    it('413 payload_too_large above the body limit', async () => {
      const small = await startTestTollgate({ env: { BODY_LIMIT_BYTES: '2048' }, role: 'api' });
      try {
        const res = await http(small.url!)('POST', path(), { key: p.adminKey, body: { scope: 'client', name: 'x'.repeat(5000) } });
        expectError(res, 413, 'payload_too_large');
      } finally {
        await small.close();
      }
    });

    it('404 route_not_found for an unknown route', async () => {
      expectError(await call('GET', '/v1/nope'), 404, 'route_not_found');
    });

    it('405 method_not_allowed for a wrong method', async () => {
      expectError(await call('DELETE', '/v1/public/status/summary'), 405, 'method_not_allowed');
    });

    it('400 validation_error naming every offending field path', async () => {
      const res = await call('POST', path(), { key: p.adminKey, body: { scope: 'root', name: '', extra: 1 } });
      expectError(res, 400, 'validation_error');
      const paths = res.json.error.details.issues.map((i: any) => i.path).sort();
      expect(paths).toEqual(['', 'name', 'scope']);
      expect(res.json.error.details.issues.find((i: any) => i.path === '').message).toMatch(/extra/);
    });

    it('500 internal_error with no stack or internal message', async () => {
      const broken = await startTestTollgate({ role: 'api' });
      try {
        await broken.db.end(); // every query now fails inside the route
        const res = await http(broken.url!)('GET', `/v1/projects/${p.project.id}`, { key: p.clientKey });
        expectError(res, 500, 'internal_error');
        expect(res.text).not.toMatch(/at .*\.ts|pool|Cannot use a pool/i);
      } finally {
        await broken.close();
      }
    });
  });
});
