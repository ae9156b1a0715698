/**
 * Tenant isolation matrix (issue 13), generated from the documented route list: project A gets one
 * of every resource; every route that takes an id (in its path or query) is called with project
 * B's admin key and A's ids, and must answer 404 (path ids) and return none of A's data. Routes
 * without ids are called with B's key and must return none of A's data either. A route whose
 * parameter has no fixture fails the test until it gets one or a listed reason to skip.
 */
import fc from 'fast-check';
import { startHarness, Harness } from './executions/helpers';
import type { TestProject } from '../support/tollgate';
import { createFixtures, fillPath, Fixtures, CANARY_PROMPT } from '../fuzz/fixtures';
import { startTestMcpServer, type TestMcpServer } from '../integration/mcp/mcp-server';
import { arbitraryFromSchema } from '../fuzz/json-schema-arbitrary';
import { bodySchemaOf } from '../fuzz/requests';
import { pathParams, v1Routes, FuzzRoute } from '../fuzz/route-list';

/** Path parameters that name no project resource, with the reason the matrix does not vary them. */
const NOT_PROJECT_DATA: Record<string, string> = {
  template_id: 'policy templates are a global catalogue, the same for every project',
  native_path: "a provider's native path, not a Tollgate resource id",
  provider: 'a model provider name (openai), the same for every project',
};

/** Routes the matrix cannot call meaningfully, with the reason. */
const SKIPPED: Record<string, string> = {};

describe('tenant isolation matrix', () => {
  let h: Harness;
  let a: TestProject;
  let b: TestProject;
  let ids: Fixtures;
  let mcp: TestMcpServer;
  beforeAll(async () => {
    h = await startHarness({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32' });
    mcp = await startTestMcpServer();
    a = await h.project();
    b = await h.project();
    ids = await createFixtures(h, a, { mcpUrl: mcp.url });
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    await mcp?.close();
  });

  /** Fixture values that are not A's data: a global catalogue id, a count, and the test MCP server's tool name (`add:call`), which any project may call. */
  const NOT_A_SECRET = ['template_id', 'tree_size', 'tool_call'];

  /** A's values that must never appear in an answer to B (ids, project id, prompt text). */
  const secretsOfA = (except: string[]) =>
    [...Object.entries(ids).filter(([k]) => !NOT_A_SECRET.includes(k)).map(([, v]) => v), a.project.id, CANARY_PROMPT].filter((v) => v && !except.includes(v));

  /** Valid-shaped bodies for the route (a few, since refinements the JSON Schema cannot express may refuse one). */
  const sampleBodies = (r: FuzzRoute): unknown[] => {
    const schema = bodySchemaOf(r);
    return schema ? fc.sample(arbitraryFromSchema(schema), { numRuns: 5, seed: 13 }) : [undefined];
  };
  /** A stream (SSE) answer: its status and what it sent within a second. */
  const streamAsB = async (path: string) => {
    const abort = new AbortController();
    const res = await fetch(h.tg.url! + path, { headers: { authorization: `Bearer ${b.adminKey}` }, signal: abort.signal });
    let text = '';
    const reader = res.body!.getReader();
    const stop = setTimeout(() => abort.abort(), 1000);
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString();
      }
    } catch {
      /* aborted after a second */
    } finally {
      clearTimeout(stop);
    }
    return { status: res.status, text };
  };
  const callAsB = async (r: FuzzRoute, path: string) => {
    if (r.contentType === 'text/event-stream') return streamAsB(path);
    let res!: Awaited<ReturnType<Harness['call']>>;
    for (const body of r.method === 'get' || r.method === 'delete' ? [undefined] : sampleBodies(r)) {
      res = await h.call(r.method.toUpperCase(), path, { key: b.adminKey, body: body ?? (r.method === 'get' || r.method === 'delete' ? undefined : {}) });
      if (res.status !== 400) break;
    }
    return res;
  };

  it('every route with A ids and B key: 404 and none of A data', async () => {
    const routes = v1Routes().filter((r) => r.auth !== 'public' && !r.path.startsWith('/v1/proxy/'));
    const covered: string[] = [];
    const skipped: string[] = [];
    const problems: string[] = [];
    for (const r of routes) {
      const name = `${r.method.toUpperCase()} ${r.path}`;
      if (SKIPPED[name]) {
        skipped.push(`${name}: ${SKIPPED[name]}`);
        continue;
      }
      const params = pathParams(r.path).filter((n) => !NOT_PROJECT_DATA[n]);
      const unknown = params.filter((n) => ids[n] === undefined);
      if (unknown.length) {
        problems.push(`${name}: no fixture for :${unknown.join(', :')} (add one to test/fuzz/fixtures.ts or a reason to SKIPPED)`);
        continue;
      }
      // Query parameters naming a fixture get A's id too (filters, proofs).
      const queryIds = Object.keys(r.query?.properties ?? {}).filter((k) => ids[k] !== undefined && k !== 'template_id');
      const query = queryIds.length ? `?${new URLSearchParams(Object.fromEntries(queryIds.map((k) => [k, ids[k]]))).toString()}` : '';
      const path = fillPath(r.path, r.method, ids) + query;
      const res = await callAsB(r, path);
      covered.push(name);
      const inRequest = params.map((n) => ids[n]).concat(queryIds.map((k) => ids[k]));
      const leaked = secretsOfA(inRequest).filter((v) => res.text.includes(v));
      if (leaked.length) problems.push(`${name} → ${res.status} leaks ${leaked.join(', ')}: ${res.text.slice(0, 300)}`);
      if (params.length && res.status !== 404) problems.push(`${path} → ${res.status}, expected 404: ${res.text.slice(0, 300)}`);
      if (!params.length && res.status >= 500) problems.push(`${path} → ${res.status}: ${res.text.slice(0, 300)}`);
    }
    // A's resources are untouched by B's calls (deletes, revokes, cancels).
    expect((await h.call('GET', `/v1/policies/${ids.policy_id}`, { key: a.adminKey })).status).toBe(200);
    expect((await h.call('GET', `/v1/webhooks/${ids.subscription_id}`, { key: a.adminKey })).status).toBe(200);
    expect((await h.call('GET', `/v1/mcp/servers/${ids.server_ref}`, { key: a.adminKey })).status).toBe(200);
    expect((await h.call('GET', `/v1/sessions/${ids.session_id}`, { key: a.adminKey })).json).toMatchObject({ status: 'active', usage: { turns: 0 } });
    expect((await h.call('GET', `/v1/sessions/${ids.session_id}/mcp-tool-calls`, { key: a.adminKey })).json.data).toEqual([expect.objectContaining({ id: ids.mcp_tool_call_id })]);
    const withIds = covered.filter((n) => /:[a-z_]+/.test(n.replace(/:native_path|:template_id/g, ''))).length;
    process.stdout.write(`isolation: ${covered.length} routes called with project B's key (${withIds} with A's ids), ${skipped.length} skipped${skipped.length ? `:\n  ${skipped.join('\n  ')}` : ''}\n`);
    expect(problems).toEqual([]);
    expect(withIds).toBeGreaterThanOrEqual(25);
  }, 300_000);
});
