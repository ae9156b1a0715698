import { startTestTollgate, createTestProject, http, TestProject } from '../../support/tollgate';
import { expectError } from '../../support/errors';
import { revokeApiKey, findApiKeyByKey } from '../../../src/db/repositories/api-keys';
import { waitUntil } from '../../support/wait';

describe('authentication: API keys, scopes, revocation', () => {
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof http>;
  let p: TestProject;

  beforeAll(async () => {
    tg = await startTestTollgate();
    call = http(tg.url!);
    p = await createTestProject(tg.db);
  });
  afterAll(async () => tg?.close());

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
