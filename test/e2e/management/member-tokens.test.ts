/**
 * Routes flagged `members` in the route table (the dashboard's reads, attest and revoke) accept a
 * member's user access token with the project in the Tollgate-Project header; every other key route
 * keeps refusing user tokens. Also the policy version history route the dashboard shows.
 */
import { documentedRoutes } from '../../../src/api/openapi';
import { createTestProject, http as httpClient, startTestTollgate } from '../../support/tollgate';
import { signIn, userWithRoles } from './support';

describe('member tokens on project key routes', () => {
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof httpClient>;
  beforeAll(async () => {
    tg = await startTestTollgate();
    call = httpClient(tg.url!);
  });
  afterAll(async () => {
    await tg.close();
  });

  it('flags only read, review and revocation routes', () => {
    const flagged = documentedRoutes().filter((r) => r.members);
    expect(flagged.length).toBeGreaterThan(10);
    for (const r of flagged) {
      expect(['key', 'admin']).toContain(r.auth);
      if (r.method !== 'get') expect(r.path).toMatch(/\/(attest|revoke)$/);
    }
  });

  it('viewer reads, admin attests and revokes as the user, other projects 404, no header 400, model calls refuse the token', async () => {
    const a = await createTestProject(tg.db);
    const b = await createTestProject(tg.db);
    const viewer = await userWithRoles(tg.db, [{ projectId: a.project.id, role: 'viewer' }]);
    const admin = await userWithRoles(tg.db, [{ projectId: a.project.id, role: 'admin' }]);
    const viewerToken = (await signIn(call, viewer.email)).access_token;
    const adminToken = (await signIn(call, admin.email)).access_token;
    const as = (token: string, project = a.project.id) => ({ authorization: `Bearer ${token}`, 'tollgate-project': project });

    await call('PATCH', `/v1/projects/${a.project.id}/policy`, { key: a.adminKey, body: { review_rules: [{ id: 'r', match: {} }] } });
    const issued = await call('POST', '/v1/permits', { key: a.clientKey, body: { project_id: a.project.id, operation: 'generate.text', provider: 'openai', model: 'gpt-4o-mini' } });
    expect(issued.json.decision).toBe('review');
    const permitId = issued.json.permit_id as string;

    const listed = await call('GET', '/v1/permits?decision=review', { headers: as(viewerToken) });
    expect(listed.status).toBe(200);
    expect(listed.json.data.map((p: { id: string }) => p.id)).toEqual([permitId]);
    expect((await call('GET', `/v1/permits/${permitId}/timeline`, { headers: as(viewerToken) })).status).toBe(200);
    expect((await call('GET', '/v1/governance/events', { headers: as(viewerToken) })).status).toBe(200);

    const viewerAttest = await call('POST', `/v1/permits/${permitId}/attest`, { headers: as(viewerToken), body: { attested_by: viewer.email, reason: 'looks fine' } });
    expect(viewerAttest.status).toBe(403);
    expect(viewerAttest.json.error.code).toBe('insufficient_role');

    const attested = await call('POST', `/v1/permits/${permitId}/attest`, { headers: as(adminToken), body: { attested_by: admin.email, reason: 'looks fine' } });
    expect(attested.status).toBe(201);
    expect(attested.json.permit.status).toBe('attested');
    const revoked = await call('POST', `/v1/permits/${attested.json.allowed_permit.id}/revoke`, { headers: as(adminToken), body: { reason: 'changed my mind' } });
    expect(revoked.status).toBe(200);
    const events = await call('GET', '/v1/governance/events?event_type=permit.revoked', { key: a.clientKey });
    expect(JSON.stringify(events.json.data)).toContain(`user:${admin.id}`);

    const elsewhere = await call('GET', '/v1/permits', { headers: as(viewerToken, b.project.id) });
    expect(elsewhere.status).toBe(404);
    const noHeader = await call('GET', '/v1/permits', { headers: { authorization: `Bearer ${viewerToken}` } });
    expect(noHeader.status).toBe(400);
    expect(noHeader.json.error.details.issues[0].path).toBe('headers.tollgate-project');
    const modelCall = await call('POST', '/v1/executions', { headers: as(adminToken), body: { operation: 'generate.text', messages: [{ role: 'user', content: 'hi' }] } });
    expect(modelCall.status).toBe(401);
    expect(modelCall.json.error.code).toBe('invalid_api_key');
  });

  it('lists stored policy versions newest first, to members and the admin key only', async () => {
    const a = await createTestProject(tg.db);
    const viewer = await userWithRoles(tg.db, [{ projectId: a.project.id, role: 'viewer' }]);
    const token = (await signIn(call, viewer.email)).access_token;
    const empty = await call('GET', `/v1/projects/${a.project.id}/policy/versions`, { headers: { authorization: `Bearer ${token}` } });
    expect(empty.status).toBe(200);
    expect(empty.json.data).toEqual([]);
    for (const mode of ['monitor', 'off', 'block']) {
      expect((await call('PATCH', `/v1/projects/${a.project.id}/policy`, { key: a.adminKey, body: { firewall: { mode } } })).status).toBe(200);
    }
    const listed = await call('GET', `/v1/projects/${a.project.id}/policy/versions?limit=2`, { headers: { authorization: `Bearer ${token}` } });
    expect(listed.json.data.map((v: { version: number; document: { firewall: { mode: string } } }) => [v.version, v.document.firewall.mode])).toEqual([
      [3, 'block'],
      [2, 'off'],
    ]);
    expect((await call('GET', `/v1/projects/${a.project.id}/policy/versions`, { key: a.clientKey })).status).toBe(403);
    expect((await call('GET', `/v1/projects/${a.project.id}/policy/versions?limit=0`, { key: a.adminKey })).status).toBe(400);
  });
});
