import { startTestTollgate, createTestProject, http, TestProject } from '../../support/tollgate';
import { expectError } from '../../support/errors';

describe("error contract: the spec's error shape for every failure class", () => {
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof http>;
  let p: TestProject;

  beforeAll(async () => {
    tg = await startTestTollgate();
    call = http(tg.url!);
    p = await createTestProject(tg.db);
  });
  afterAll(async () => tg?.close());

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
