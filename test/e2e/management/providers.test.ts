import http from 'node:http';
import { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { startEmulator, type EmulatorHandle } from '../../../emulator/server';
import { createTestProject, http as httpClient, startTestTollgate } from '../../support/tollgate';
import { emulatorEnv } from '../executions/helpers';
import { setProviderKey, rotateProviderKeyKek } from '../../../src/management/provider-keys';
import { findProviderKey } from '../../../src/db/repositories/provider-keys';
import { openSecret, parseKeks, providerKeyContext } from '../../../src/crypto/envelope';
import { signIn, userWithRoles } from './support';
import { CANARY_PROVIDER_KEY } from '../../support/test-logs';

/** Forwards to the emulator and records the Authorization header of each OpenAI call. */
async function recordingProxy(emu: EmulatorHandle) {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      seen.push(String(req.headers.authorization ?? ''));
      const upstream = await fetch(emu.url + req.url, { method: req.method, headers: { 'content-type': String(req.headers['content-type'] ?? 'application/json'), authorization: String(req.headers.authorization ?? '') }, body: chunks.length ? Buffer.concat(chunks) : undefined });
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
      res.end(Buffer.from(await upstream.arrayBuffer()));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('project provider keys', () => {
  let emu: EmulatorHandle;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof httpClient>;
  beforeAll(async () => {
    emu = await startEmulator({ port: 0 });
    proxy = await recordingProxy(emu);
    tg = await startTestTollgate({ env: { ...emulatorEnv(emu.url), OPENAI_BASE_URL: `${proxy.url}/openai`, OPENAI_API_KEY: 'deployment-openai-key' } });
    call = httpClient(tg.url!);
  });
  afterAll(async () => {
    await tg.close();
    await proxy.close();
    await emu.close();
  });

  // Plain fetch: only the provider call matters here (the envelope is covered by the execution tests).
  const execute = async (key: string) =>
    fetch(`${tg.url}/v1/executions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ operation: 'generate.text', messages: [{ role: 'user', content: 'Hello' }], routing: { provider: 'openai', model: 'gpt-4o-mini' } }),
    });

  it('stores the key encrypted, never shows it, dispatches with it, tests it, and falls back to the deployment key once deleted', async () => {
    const p = await createTestProject(tg.db);
    const admin = await userWithRoles(tg.db, [{ projectId: p.project.id, role: 'admin' }]);
    const s = await signIn(call, admin.email);
    // The canary lets the end-of-run log scan find this key wherever it would leak.
    const secret = `sk-proj-${CANARY_PROVIDER_KEY}-${randomBytes(12).toString('hex')}WXYZ`;

    const put = await call('PUT', `/v1/projects/${p.project.id}/providers/openai/key`, { key: s.access_token, body: { api_key: secret } });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ object: 'project_provider', provider: 'openai', key_source: 'project', key: { last_four: 'WXYZ', status: 'untested' } });
    expect(put.text).not.toContain(secret);

    const row = await tg.db.query('SELECT * FROM project_provider_keys WHERE project_id = $1', [p.project.id]);
    expect(row.rows).toHaveLength(1);
    const stored = Buffer.concat([row.rows[0].ciphertext, row.rows[0].wrapped_key]);
    expect(stored.includes(Buffer.from(secret))).toBe(false);
    expect(stored.includes(Buffer.from(secret.slice(8, 20)))).toBe(false);
    expect(JSON.stringify(row.rows[0])).not.toContain(secret.slice(8, 20));

    const list = await call('GET', `/v1/projects/${p.project.id}/providers`, { key: s.access_token });
    expect(list.status).toBe(200);
    expect(list.json.data.map((d: any) => d.provider)).toEqual(['openai', 'anthropic', 'google', 'deepseek', 'mistral']);
    expect(list.json.data[0].key.last_four).toBe('WXYZ');
    expect(list.json.data[1]).toMatchObject({ key_source: 'deployment', key: null });
    expect(list.text).not.toContain(secret);

    proxy.seen.length = 0;
    const done = await execute(p.clientKey);
    expect(done.status).toBe(200);
    expect(proxy.seen).toEqual([`Bearer ${secret}`]);

    const test = await call('POST', `/v1/projects/${p.project.id}/providers/openai/test`, { key: s.access_token });
    expect(test.status).toBe(200);
    expect(test.json).toMatchObject({ object: 'provider_key_test', key_source: 'project', outcome: 'ok', model: 'gpt-4o-mini' });
    expect(proxy.seen[proxy.seen.length - 1]).toBe(`Bearer ${secret}`);
    const after = await call('GET', `/v1/projects/${p.project.id}/providers`, { key: s.access_token });
    expect(after.json.data[0].key).toMatchObject({ status: 'verified', last_test: { outcome: 'ok' } });

    // Another project without a key of its own still uses the deployment's.
    const other = await createTestProject(tg.db);
    proxy.seen.length = 0;
    expect((await execute(other.clientKey)).status).toBe(200);
    expect(proxy.seen).toEqual(['Bearer deployment-openai-key']);

    const del = await call('DELETE', `/v1/projects/${p.project.id}/providers/openai/key`, { key: s.access_token });
    expect(del.status).toBe(200);
    expect(del.json).toMatchObject({ deleted: true, key_source: 'deployment' });
    proxy.seen.length = 0;
    expect((await execute(p.clientKey)).status).toBe(200);
    expect(proxy.seen).toEqual(['Bearer deployment-openai-key']);
    expect((await call('DELETE', `/v1/projects/${p.project.id}/providers/openai/key`, { key: s.access_token })).status).toBe(404);
  });

  it('checks roles on every provider route and answers 404 for another project', async () => {
    const mine = await createTestProject(tg.db);
    const theirs = await createTestProject(tg.db);
    const viewer = await userWithRoles(tg.db, [{ projectId: mine.project.id, role: 'viewer' }]);
    const s = await signIn(call, viewer.email);
    const base = `/v1/projects/${mine.project.id}/providers`;
    expect((await call('GET', base, { key: s.access_token })).status).toBe(200);
    for (const [method, path, body] of [
      ['PUT', `${base}/openai/key`, { api_key: `${CANARY_PROVIDER_KEY}-sk-viewer-cannot-1234` }],
      ['DELETE', `${base}/openai/key`, undefined],
      ['POST', `${base}/openai/test`, undefined],
    ] as const) {
      const res = await call(method, path, { key: s.access_token, body });
      expect(res.status).toBe(403);
      expect(res.json.error).toMatchObject({ code: 'insufficient_role', details: { required_role: 'admin', role: 'viewer' } });
    }
    const other = `/v1/projects/${theirs.project.id}/providers`;
    for (const [method, path] of [['GET', other], ['PUT', `${other}/openai/key`], ['DELETE', `${other}/openai/key`], ['POST', `${other}/openai/test`]] as const) {
      expect((await call(method, path, { key: s.access_token, body: method === 'PUT' ? { api_key: `${CANARY_PROVIDER_KEY}-sk-other-project-1234` } : undefined })).status).toBe(404);
      expect((await call(method, path, { key: mine.adminKey, body: method === 'PUT' ? { api_key: `${CANARY_PROVIDER_KEY}-sk-other-project-1234` } : undefined })).status).toBe(404);
    }
    expect((await call('PUT', `${base}/nope/key`, { key: mine.adminKey, body: { api_key: `${CANARY_PROVIDER_KEY}-sk-whatever-1234` } })).status).toBe(404);
    expect((await call('PUT', `${base}/openai/key`, { key: mine.adminKey, body: {} })).status).toBe(400);
  });

  it('rotates the key-encryption key by re-wrapping data keys', async () => {
    const p = await createTestProject(tg.db);
    const k1 = randomBytes(32).toString('base64');
    const k2 = randomBytes(32).toString('base64');
    const kidA = `a-${randomBytes(4).toString('hex')}`;
    const kidB = `b-${randomBytes(4).toString('hex')}`;
    const base = { env: 'test' as const, databaseUrl: tg.config.databaseUrl, providers: tg.config.providers };
    await setProviderKey(tg.db, { ...base, providerKeyKeks: `${kidA}:${k1}` }, { projectId: p.project.id, provider: 'mistral', apiKey: `${CANARY_PROVIDER_KEY}-mistral-project-key-9876`, actor: 'test' });
    const before = (await findProviderKey(tg.db, p.project.id, 'mistral'))!;
    expect(before.kek_id).toBe(kidA);

    const result = await rotateProviderKeyKek(tg.db, { ...base, providerKeyKeks: `${kidB}:${k2},${kidA}:${k1}` });
    expect(result).toMatchObject({ object: 'kek_rotation', active_kek_id: kidB });
    expect(result.rewrapped).toBeGreaterThanOrEqual(1);
    const after = (await findProviderKey(tg.db, p.project.id, 'mistral'))!;
    expect(after.kek_id).toBe(kidB);
    expect(after.ciphertext.equals(before.ciphertext)).toBe(true);
    expect(after.wrapped_key.equals(before.wrapped_key)).toBe(false);
    // The old KEK can go: the key opens with the new one alone.
    const sealed = { kekId: after.kek_id, wrappedKey: after.wrapped_key, ciphertext: after.ciphertext };
    expect(openSecret(parseKeks(`${kidB}:${k2}`), sealed, providerKeyContext(p.project.id, 'mistral'))).toBe(`${CANARY_PROVIDER_KEY}-mistral-project-key-9876`);
    // A second run has nothing of these KEKs left to do.
    const again = await rotateProviderKeyKek(tg.db, { ...base, providerKeyKeks: `${kidB}:${k2},${kidA}:${k1}` });
    expect((await findProviderKey(tg.db, p.project.id, 'mistral'))!.wrapped_key.equals(after.wrapped_key)).toBe(true);
    expect(again.active_kek_id).toBe(kidB);
  });
});
