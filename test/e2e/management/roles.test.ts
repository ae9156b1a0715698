/**
 * Every management route of a project, taken from the route table (so a new one is covered without
 * naming it): another project's member gets 404 (the project is not confirmed), a viewer reads but
 * changes nothing (403 insufficient_role), no credentials 401.
 */
import { documentedRoutes } from '../../../src/api/openapi';
import { createTestProject, http as httpClient, startTestTollgate } from '../../support/tollgate';
import { signIn, userWithRoles } from './support';

const PARAMS: Record<string, string> = { provider: 'openai', key_id: 'key_does_not_matter' };
/** Reads that need more than a viewer (decided in docs/decisions/management-api.md). */
const ADMIN_READS = new Set(['GET /v1/projects/:project_id/api-keys']);

describe('management routes: roles and other projects', () => {
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof httpClient>;
  beforeAll(async () => {
    tg = await startTestTollgate();
    call = httpClient(tg.url!);
  });
  afterAll(async () => {
    await tg.close();
  });

  const routes = documentedRoutes().filter((r) => r.path.startsWith('/v1/projects/:project_id'));

  it('covers the project routes of the management API', () => {
    const paths = routes.map((r) => `${r.method.toUpperCase()} ${r.path}`);
    for (const expected of ['GET /v1/projects/:project_id', 'GET /v1/projects/:project_id/usage', 'PUT /v1/projects/:project_id/providers/:provider/key', 'GET /v1/projects/:project_id/policy']) {
      expect(paths).toContain(expected);
    }
  });

  it('another project 404, viewer reads but may not change, no credentials 401', async () => {
    const a = await createTestProject(tg.db);
    const b = await createTestProject(tg.db);
    const outsider = await userWithRoles(tg.db, [{ projectId: b.project.id, role: 'owner' }]);
    const viewer = await userWithRoles(tg.db, [{ projectId: a.project.id, role: 'viewer' }]);
    const outsiderToken = (await signIn(call, outsider.email)).access_token;
    const viewerToken = (await signIn(call, viewer.email)).access_token;
    const failures: string[] = [];
    for (const r of routes) {
      const path = r.path.replace(':project_id', a.project.id).replace(/:(\w+)/g, (_m, name: string) => PARAMS[name] ?? 'x');
      const method = r.method.toUpperCase();
      const body = method === 'GET' || method === 'DELETE' ? undefined : {};
      const label = `${method} ${r.path}`;
      const other = await call(method, path, { key: outsiderToken, body });
      if (other.status !== 404) failures.push(`${label}: another project's owner got ${other.status}, not 404`);
      const none = await call(method, path, { body });
      if (none.status !== 401) failures.push(`${label}: no credentials got ${none.status}, not 401`);
      const asViewer = await call(method, path, { key: viewerToken, body });
      if (method === 'GET' && !ADMIN_READS.has(label)) {
        if (asViewer.status !== 200) failures.push(`${label}: a viewer got ${asViewer.status} reading`);
      } else if (asViewer.status !== 403 || asViewer.json?.error?.code !== 'insufficient_role') {
        failures.push(`${label}: a viewer got ${asViewer.status} ${asViewer.json?.error?.code ?? ''} changing`);
      }
    }
    expect(failures).toEqual([]);
    expect(routes.length).toBeGreaterThanOrEqual(15);
  });
});
