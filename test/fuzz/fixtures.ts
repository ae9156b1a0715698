/**
 * One of each resource a /v1 route can take an id of, created through the API for one project:
 * the fuzz tests fill path parameters with them, the isolation matrix calls another project's
 * routes with them. Keyed by the path parameter's name in src/api/openapi.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Harness } from '../e2e/executions/helpers';
import type { TestProject } from '../support/tollgate';

export type Fixtures = Record<string, string>;

/** Native paths a proxy route accepts, per provider (the `native_path` parameter). */
export const NATIVE_PATHS: Record<string, { post: string; get: string }> = {
  openai: { post: 'v1/chat/completions', get: 'v1/models' },
  anthropic: { post: 'v1/messages', get: 'v1/models' },
  google: { post: 'v1beta/models/gemini-2.5-flash:generateContent', get: 'v1beta/models' },
  deepseek: { post: 'chat/completions', get: 'models' },
  mistral: { post: 'v1/chat/completions', get: 'v1/models' },
};

/** A prompt marker the secret scan (test/fuzz/secret-scan.test.ts) looks for in the logs. */
import { CANARY_PROMPT } from '../support/test-logs';
export { CANARY_PROMPT };

async function must(h: Harness, p: TestProject, method: string, path: string, body?: unknown): Promise<any> {
  const res = await h.call(method, path, { key: p.adminKey, body });
  if (res.status >= 300) throw new Error(`fixture ${method} ${path}: ${res.status} ${res.text.slice(0, 300)}`);
  return { json: res.json, headers: res.headers };
}

/** Polls until `read` returns a value (an event or checkpoint written in the background). */
async function eventually<T>(read: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`fixture: no ${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export interface FixtureOptions {
  /** The URL of a running MCP server (test/integration/mcp/mcp-server.ts) the project registers; it must offer an `add` tool. */
  mcpUrl: string;
}

/** The MCP tool the fixtures call (the test MCP server's `add`), as the `:tool_call` segment names it. */
export const FIXTURE_TOOL = 'add';

export async function createFixtures(h: Harness, p: TestProject, opts: FixtureOptions): Promise<Fixtures> {
  const messages = [{ role: 'user', content: `fixture ${CANARY_PROMPT}` }];
  const exec = await must(h, p, 'POST', '/v1/executions', { operation: 'generate.text', messages });
  const workflowId = `wf-${randomUUID()}`;
  await must(h, p, 'POST', '/v1/workflows', { workflow_id: workflowId, intent: { expected_calls: 5, max_calls: 10, max_duration_seconds: 3600 } });
  const job = await must(h, p, 'POST', '/v1/jobs', { operation: 'generate.text', messages });
  const webhook = await must(h, p, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/hook', event_types: ['job.completed'] });
  // A voice session (voice routes need one; every session route accepts it), a search evidence item
  // and an MCP tool call on it, so the session's reads have data another project must not see.
  // Created before the review rule below, which would hold the tool call for review.
  const session = await must(h, p, 'POST', '/v1/sessions', { model: 'gpt-realtime', modality: 'voice', max_turns: 50 });
  const search = await must(h, p, 'POST', `/v1/sessions/${session.json.id}/search-evidence`, {
    query: `fixture ${CANARY_PROMPT}`,
    results: [{ url: 'https://example.com/fixture', title: 'Fixture', rank: 1 }],
  });
  // A unique ref, so the leak check cannot match an unrelated word in another project's answer.
  const serverRef = `mcp-${randomUUID().slice(0, 8)}`;
  await must(h, p, 'POST', '/v1/mcp/servers', { server_ref: serverRef, url: opts.mcpUrl, allowed_tools: [FIXTURE_TOOL] });
  const toolCall = await must(h, p, 'POST', `/v1/mcp/servers/${serverRef}/tools/${FIXTURE_TOOL}:call`, {
    arguments: { a: 2, b: 3 },
    session_id: session.json.id,
  });
  const policy = await must(h, p, 'POST', '/v1/policies', { type: 'review_rule', id: `r-${randomUUID().slice(0, 8)}`, config: {} });
  const now = Date.now();
  const exp = await must(h, p, 'POST', '/v1/compliance/exports', {
    window: { since: new Date(now - 3_600_000).toISOString(), until: new Date(now + 60_000).toISOString() },
  });
  const key = await must(h, p, 'POST', `/v1/projects/${p.project.id}/api-keys`, { scope: 'client', name: 'spare' });
  const templates = await must(h, p, 'GET', '/v1/policy-templates');
  const event = await eventually(async () => (await must(h, p, 'GET', '/v1/governance/events')).json.data?.[0]?.id as string | undefined, 'governance event');
  const treeSize = await eventually(async () => {
    const res = await h.call('GET', '/v1/integrity/checkpoints/latest', { key: p.adminKey });
    return res.status === 200 ? String(res.json.tree_size) : undefined;
  }, 'checkpoint');
  return {
    request_id: exec.json.id,
    call_id: exec.json.id,
    permit_id: exec.headers.get('x-svc-permit-id'),
    workflow_id: workflowId,
    job_id: job.json.id,
    subscription_id: webhook.json.id,
    policy_id: policy.json.id,
    export_id: exp.json.id,
    key_id: key.json.id,
    template_id: templates.json.data?.[0]?.id ?? templates.json[0]?.id,
    event_id: event,
    tree_size: treeSize,
    project_id: p.project.id,
    session_id: session.json.id,
    search_id: search.json.id,
    server_ref: serverRef,
    tool_call: `${FIXTURE_TOOL}:call`,
    mcp_tool_call_id: toolCall.json.id,
  };
}

/** A Koa path with its `:param` segments filled from the fixtures (native_path per provider). */
export function fillPath(koaPath: string, method: string, ids: Fixtures, override: (name: string) => string | undefined = () => undefined): string {
  const provider = /^\/v1\/proxy\/([a-z]+)\//.exec(koaPath)?.[1];
  return koaPath.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => {
    const v = override(name);
    if (v !== undefined) return v;
    if (name === 'native_path' && provider) return method === 'post' ? NATIVE_PATHS[provider].post : NATIVE_PATHS[provider].get;
    // A model provider's name (management provider-key routes), not a resource id.
    if (name === 'provider') return 'openai';
    if (ids[name] === undefined) throw new Error(`no fixture for :${name} (${koaPath})`);
    return encodeURIComponent(ids[name]);
  });
}
