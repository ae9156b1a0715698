/** Managed MCP tool calls against a real MCP server (official SDK on both sides). */
import { createTestProject, http, startTestTollgate, type TestProject } from '../../support/tollgate';
import { startTestMcpServer, type TestMcpServer } from './mcp-server';

jest.setTimeout(120_000);

describe('managed MCP tool calls', () => {
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof http>;
  let mcp: TestMcpServer;
  let p: TestProject;

  beforeAll(async () => {
    tg = await startTestTollgate({ env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' } });
    call = http(tg.url!);
    mcp = await startTestMcpServer();
  });
  beforeEach(async () => {
    p = await createTestProject(tg.db);
    const reg = await call('POST', '/v1/mcp/servers', {
      key: p.adminKey,
      body: { server_ref: 'calc', url: mcp.url, credential: { type: 'bearer', token: 'mcp-secret-token' }, allowed_tools: ['add', 'fail', 'delete_*'] },
    });
    expect(reg.status).toBe(201);
  });
  afterAll(async () => {
    await mcp?.close();
    await tg?.close();
  });

  const toolCall = (tool: string, body: Record<string, unknown>, headers: Record<string, string> = {}, key = p.clientKey) =>
    call('POST', `/v1/mcp/servers/calc/tools/${tool}:call`, { key, body, headers });

  it('registers servers with a sealed credential (never shown; admin key only)', async () => {
    const got = await call('GET', '/v1/mcp/servers/calc', { key: p.adminKey });
    expect(got.json).toMatchObject({ server_ref: 'calc', url: mcp.url, allowed_tools: ['add', 'fail', 'delete_*'], credential: { type: 'bearer', configured: true } });
    expect(got.text).not.toContain('mcp-secret-token');
    const row = await tg.db.query('SELECT credential_encrypted FROM mcp_servers WHERE project_id = $1', [p.project.id]);
    expect(row.rows[0].credential_encrypted).toMatch(/^v1\./);
    expect(row.rows[0].credential_encrypted).not.toContain('mcp-secret-token');
    expect((await call('GET', '/v1/mcp/servers', { key: p.clientKey })).status).toBe(403);
    expect((await call('POST', '/v1/mcp/servers', { key: p.adminKey, body: { server_ref: 'calc', url: mcp.url, allowed_tools: ['x'] } })).status).toBe(409);
    expect((await call('POST', '/v1/mcp/servers', { key: p.adminKey, body: { server_ref: 'meta', url: 'http://169.254.169.254/mcp', allowed_tools: ['x'] } })).status).toBe(400);
  });

  it('an allowed call: governed, called with the credential, recorded as evidence on the permit', async () => {
    const res = await toolCall('add', { arguments: { a: 2, b: 3 } });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ object: 'mcp_tool_call', outcome: 'success', is_error: false, result: { content: [{ type: 'text', text: '5' }] }, arguments_sha256: expect.stringMatching(/^[0-9a-f]{64}$/), result_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(res.headers.get('x-svc-permit-id')).toBe(res.json.permit_id);
    expect(mcp.authorizations).toContain('Bearer mcp-secret-token');
    const evidence = await call('GET', `/v1/permits/${res.json.permit_id}/mcp-tool-calls`, { key: p.clientKey });
    expect(evidence.json.data).toEqual([expect.objectContaining({ id: res.json.id, outcome: 'success', duration_ms: expect.any(Number), server_ref: 'calc', tool_name: 'add' })]);
  });

  it('denied by policy: 403, no upstream call, denial recorded', async () => {
    await call('PATCH', `/v1/projects/${p.project.id}/policy`, { key: p.adminKey, body: { deny_rules: [{ id: 'no-delete', match: { operation: 'tool.call', metadata: { tool: 'delete_*' } } }] } });
    const before = mcp.calls.delete_everything ?? 0;
    const res = await toolCall('delete_everything', {});
    expect(res.status).toBe(403);
    expect(res.json.error).toMatchObject({ code: 'denied', details: { reason_code: 'policy.rule_denied', decision: 'deny' } });
    expect(mcp.calls.delete_everything ?? 0).toBe(before);
    const ev = await call('GET', `/v1/permits/${res.json.error.details.permit_id}/mcp-tool-calls`, { key: p.clientKey });
    expect(ev.json.data[0]).toMatchObject({ outcome: 'denied' });
    expect((await toolCall('not_listed', {})).json.error.code).toBe('mcp.tool_not_allowed');
  });

  it('a tool error (isError) and a protocol error are both recorded', async () => {
    const toolErr = await toolCall('fail', {});
    expect(toolErr.status).toBe(200);
    expect(toolErr.json).toMatchObject({ outcome: 'tool_error', is_error: true });
    // A server that fails at the protocol level (HTTP 500 to initialize).
    await call('POST', '/v1/mcp/servers', { key: p.adminKey, body: { server_ref: 'broken', url: mcp.brokenUrl, allowed_tools: ['*'] } });
    const proto = await call('POST', '/v1/mcp/servers/broken/tools/add:call', { key: p.clientKey, body: { estimated_cost_usd_micros: 10 } });
    expect(proto.status).toBe(502);
    expect(proto.json.error.code).toBe('upstream_error');
    const ev = await call('GET', `/v1/permits/${proto.json.error.details.permit_id}/mcp-tool-calls`, { key: p.clientKey });
    expect(ev.json.data[0]).toMatchObject({ outcome: 'protocol_error', error: { message: expect.any(String) } });
    const permit = await tg.db.query('SELECT reservation_state FROM permits WHERE id = $1', [proto.json.error.details.permit_id]);
    expect(permit.rows[0].reservation_state).toBe('released');
  });

  it('an intent (workflow_id or X-Svc-Workflow-Id) is checked as on /v1/executions: unknown is 403 workflow_intent.not_found, a declared one gives its calls up to max_calls', async () => {
    const before = mcp.calls.add ?? 0;
    const unknown = await toolCall('add', { arguments: { a: 1, b: 1 }, workflow_id: 'no-such-run' });
    expect(unknown.status).toBe(403);
    expect(unknown.json.error).toMatchObject({ code: 'denied', details: { decision: 'deny', reason_code: 'workflow_intent.not_found' } });
    const viaHeader = await toolCall('add', { arguments: { a: 1, b: 1 } }, { 'x-svc-workflow-id': 'no-such-run' });
    expect(viaHeader.json.error.details.reason_code).toBe('workflow_intent.not_found');
    expect(mcp.calls.add ?? 0).toBe(before);

    expect((await call('POST', '/v1/workflows', { key: p.clientKey, body: { workflow_id: 'tool-run', intent: { max_calls: 1 } } })).status).toBe(201);
    const first = await toolCall('add', { arguments: { a: 2, b: 2 } }, { 'x-svc-workflow-id': 'tool-run' });
    expect(first.status).toBe(200);
    const second = await toolCall('add', { arguments: { a: 2, b: 2 }, workflow_id: 'tool-run' });
    expect(second.status).toBe(403);
    expect(second.json.error.details.reason_code).toBe('workflow_intent.max_calls_exceeded');
    expect(mcp.calls.add).toBe(before + 1);
    const permits = await tg.db.query(`SELECT decision, reason_code FROM permits WHERE project_id = $1 AND workflow_id IS NOT NULL ORDER BY issued_at`, [p.project.id]);
    expect(permits.rows.map((r) => `${r.decision}:${r.reason_code}`)).toEqual([
      'deny:workflow_intent.not_found', 'deny:workflow_intent.not_found', 'allow:policy.active_policy_candidate', 'deny:workflow_intent.max_calls_exceeded',
    ]);
    expect((await call('GET', '/v1/workflows/tool-run', { key: p.clientKey })).json.actual_calls).toBe(1);
    expect((await toolCall('add', { arguments: { a: 1, b: 1 } }, { 'x-svc-workflow-id': 'bad id' })).status).toBe(400);
  });

  it('idempotency: same bound content replays after a fresh authorization; different content 409', async () => {
    const first = await toolCall('add', { arguments: { a: 1, b: 1 }, idempotency_key: 'k1' });
    const n = mcp.calls.add;
    const again = await toolCall('add', { arguments: { a: 1, b: 1 } }, { 'idempotency-key': 'k1' });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json).toEqual(first.json);
    expect(mcp.calls.add).toBe(n);
    // Different arguments, different stream flag, another calling key: different bound content.
    expect((await toolCall('add', { arguments: { a: 1, b: 2 }, idempotency_key: 'k1' })).status).toBe(409);
    expect((await toolCall('add', { arguments: { a: 1, b: 1 }, idempotency_key: 'k1', workflow_id: 'other' })).status).toBe(409);
    expect((await toolCall('add', { arguments: { a: 1, b: 1 }, idempotency_key: 'k1' }, {}, p.adminKey)).json.error.code).toBe('idempotency_conflict');
    // The fresh check: once policy denies the tool, the replay is refused.
    await call('PATCH', `/v1/projects/${p.project.id}/policy`, { key: p.adminKey, body: { deny_rules: [{ id: 'no-add', match: { operation: 'tool.call', metadata: { tool: 'add' } } }] } });
    const refused = await toolCall('add', { arguments: { a: 1, b: 1 }, idempotency_key: 'k1' });
    expect(refused.status).toBe(403);
    expect(refused.json.error.details.reason_code).toBe('policy.rule_denied');
  });

  it('idempotency: a duplicate streaming claim is 409 with no second upstream call; streams are not replayed', async () => {
    const stream = await fetch(`${tg.url}/v1/mcp/servers/calc/tools/add:call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${p.clientKey}`, 'content-type': 'application/json', 'idempotency-key': 's1' },
      body: JSON.stringify({ arguments: { a: 4, b: 4 }, stream: true }),
    });
    expect(stream.headers.get('content-type')).toMatch(/text\/event-stream/);
    const text = await stream.text();
    expect([...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1])).toEqual(['start', 'result']);
    expect(text).toContain('"text":"8"');
    const n = mcp.calls.add;
    const dup = await toolCall('add', { arguments: { a: 4, b: 4 }, stream: true }, { 'idempotency-key': 's1' });
    expect(dup.status).toBe(409);
    expect(dup.json.error).toMatchObject({ code: 'idempotency_conflict', details: { idempotency_key: 's1', reason: 'stream' } });
    expect(mcp.calls.add).toBe(n);
  });

  it('a call in a session is one of its action permits and is listed on the session', async () => {
    const s = (await call('POST', '/v1/sessions', { key: p.clientKey, body: { model: 'gpt-realtime', max_cost_usd_micros: 500 } })).json;
    const ok = await toolCall('add', { arguments: { a: 5, b: 5 }, session_id: s.id, estimated_cost_usd_micros: 300 });
    expect(ok.json).toMatchObject({ outcome: 'success', session_id: s.id });
    const over = await toolCall('add', { arguments: { a: 6, b: 6 }, session_id: s.id, estimated_cost_usd_micros: 300 });
    expect(over.status).toBe(403);
    expect(over.json.error.details.reason_code).toBe('session.max_cost_exceeded');
    const list = await call('GET', `/v1/sessions/${s.id}/mcp-tool-calls`, { key: p.clientKey });
    expect(list.json.data.map((c: any) => c.outcome)).toEqual(['success', 'denied']);
  });
});
