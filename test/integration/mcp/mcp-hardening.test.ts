/**
 * Managed MCP calls under hostile configuration (issue 45): credentials that are not header values
 * or that name framing headers are refused at registration; whatever a server was registered with,
 * its credential never reaches the caller, the evidence, the events or the log; and one deadline
 * bounds the whole call (connect, initialize, tool call) and closes the upstream connection.
 */
import { secretBox } from '../../../src/crypto/secret-box';
import { createTestProject, http, startTestTollgate, type TestProject } from '../../support/tollgate';
import { CANARY_MCP_CREDENTIAL, scanLogs } from '../../support/test-logs';
import { startTestMcpServer, type TestMcpServer } from './mcp-server';

jest.setTimeout(60_000);

/** Short, so the stalled-upstream test is fast; the working calls here answer in milliseconds. */
const DEADLINE_MS = 2000;

describe('managed MCP hardening', () => {
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof http>;
  let mcp: TestMcpServer;
  let p: TestProject;

  beforeAll(async () => {
    tg = await startTestTollgate({ env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', MCP_CALL_TIMEOUT_MS: String(DEADLINE_MS) } });
    call = http(tg.url!);
    mcp = await startTestMcpServer();
  });
  beforeEach(async () => {
    p = await createTestProject(tg.db);
  });
  afterAll(async () => {
    await mcp?.close();
    await tg?.close();
  });

  const register = (body: Record<string, unknown>) => call('POST', '/v1/mcp/servers', { key: p.adminKey, body: { allowed_tools: ['*'], ...body } });
  const toolCall = (ref: string, body: Record<string, unknown> = {}) => call('POST', `/v1/mcp/servers/${ref}/tools/add:call`, { key: p.clientKey, body: { arguments: { a: 1, b: 2 }, ...body } });
  const streamCall = async (ref: string) => {
    const res = await fetch(`${tg.url}/v1/mcp/servers/${ref}/tools/add:call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${p.clientKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ arguments: { a: 1, b: 2 }, stream: true }),
    });
    return res.text();
  };
  /** Every place a call's error text goes: the response, the permit's evidence, the events. */
  const everythingAbout = async (permitId: string) => {
    const evidence = await call('GET', `/v1/permits/${permitId}/mcp-tool-calls`, { key: p.clientKey });
    const rows = await tg.db.query('SELECT error, response FROM mcp_tool_calls WHERE project_id = $1', [p.project.id]);
    const events = await tg.db.query('SELECT metadata FROM events WHERE project_id = $1', [p.project.id]);
    return { evidence, stored: JSON.stringify(rows.rows) + JSON.stringify(events.rows) };
  };
  const logFindings = (secret: string) => scanLogs(process.env.TEST_LOG_DIR!, [['MCP credential', secret]]).findings.filter((f) => f.kind === 'MCP credential' || f.kind === 'MCP server credential');

  it('refuses credentials that are not header values, and header names that frame or route the request (400 naming the field)', async () => {
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ type: 'bearer', token: `${CANARY_MCP_CREDENTIAL}\nX-Injected: 1` }, 'credential.token'],
      [{ type: 'bearer', token: `${CANARY_MCP_CREDENTIAL}\r` }, 'credential.token'],
      [{ type: 'bearer', token: `${CANARY_MCP_CREDENTIAL}\u0000` }, 'credential.token'],
      [{ type: 'bearer', token: `${CANARY_MCP_CREDENTIAL}\u0007x` }, 'credential.token'],
      [{ type: 'header', name: 'X-Api-Key', value: `${CANARY_MCP_CREDENTIAL}\n` }, 'credential.value'],
      [{ type: 'header', name: 'X-Api-Key', value: ` ${CANARY_MCP_CREDENTIAL}` }, 'credential.value'],
      ...['Host', 'Authorization', 'Content-Length', 'Transfer-Encoding', 'Connection', 'Keep-Alive', 'Upgrade', 'TE', 'Trailer', 'Proxy-Authorization', 'Mcp-Session-Id', 'Content-Type', 'X Api', 'X-Api:'].map(
        (name): [Record<string, unknown>, string] => [{ type: 'header', name, value: CANARY_MCP_CREDENTIAL }, 'credential.name'],
      ),
    ];
    for (const [credential, path] of bad) {
      const res = await register({ server_ref: 'bad', url: mcp.url, credential });
      expect({ credential, status: res.status }).toEqual({ credential, status: 400 });
      expect(res.json.error).toMatchObject({ code: 'validation_error', message: expect.any(String), details: { issues: [expect.objectContaining({ path })] } });
      expect(res.text).not.toContain(CANARY_MCP_CREDENTIAL);
    }
    expect((await call('GET', '/v1/mcp/servers', { key: p.adminKey })).json.data).toEqual([]);

    // The same rules when the credential is changed; tabs inside a value are allowed.
    expect((await register({ server_ref: 'ok', url: mcp.url, credential: { type: 'header', name: 'X-Api-Key', value: `${CANARY_MCP_CREDENTIAL}\tv2` } })).status).toBe(201);
    const patch = await call('PATCH', '/v1/mcp/servers/ok', { key: p.adminKey, body: { credential: { type: 'header', name: 'Transfer-Encoding', value: 'chunked' } } });
    expect(patch.status).toBe(400);
    expect(patch.json.error.details.issues).toEqual([expect.objectContaining({ path: 'credential.name' })]);
  });

  it('scrubs every form of the credential from upstream error text: response, stream, evidence, events, log', async () => {
    const token = `${CANARY_MCP_CREDENTIAL}-bearer`;
    const key = `${CANARY_MCP_CREDENTIAL}-header`;
    expect((await register({ server_ref: 'echo', url: mcp.echoUrl, credential: { type: 'bearer', token } })).status).toBe(201);
    expect((await register({ server_ref: 'echo-key', url: mcp.echoUrl, credential: { type: 'header', name: 'X-Api-Key', value: key } })).status).toBe(201);

    for (const [ref, secret] of [['echo', token], ['echo-key', key]] as const) {
      const res = await toolCall(ref);
      expect(res.status).toBe(502);
      expect(res.json.error).toMatchObject({ code: 'upstream_error', details: { mcp_error: { message: expect.any(String) } } });
      // The upstream did quote it (the error text is there), and it was redacted.
      expect(res.json.error.message).toContain('[redacted]');
      expect(res.text).not.toContain(CANARY_MCP_CREDENTIAL);
      expect(res.text).not.toContain(Buffer.from(secret).toString('base64'));
      const { evidence, stored } = await everythingAbout(res.json.error.details.permit_id);
      expect(evidence.json.data[0]).toMatchObject({ outcome: 'protocol_error', error: { message: expect.stringContaining('[redacted]') } });
      expect(evidence.text).not.toContain(CANARY_MCP_CREDENTIAL);
      expect(stored).not.toContain(CANARY_MCP_CREDENTIAL);
      const stream = await streamCall(ref);
      expect(stream).toMatch(/^event: error$/m);
      expect(stream).not.toContain(CANARY_MCP_CREDENTIAL);
      expect(logFindings(secret)).toEqual([]);
    }
    // The 502s were logged (the scan read this run's log), without the credential.
    expect(scanLogs(process.env.TEST_LOG_DIR!).lines).toBeGreaterThan(0);
  });

  it('a server stored before registration checked credentials: the credential is neither sent nor quoted', async () => {
    // Rows written directly, bypassing the route, as a server registered before the checks would be.
    const box = await secretBox(tg.db, tg.config);
    const seal = (ref: string, secret: string) => box.seal(secret, `mcp-server-credential:${p.project.id}:${ref}`);
    const token = `${CANARY_MCP_CREDENTIAL}\nsecond-line`;
    const rows: Array<[string, 'bearer' | 'header', string | null, string]> = [
      ['nl', 'bearer', null, token],
      ['nul', 'bearer', null, `${CANARY_MCP_CREDENTIAL}\u0000tail`],
      ['framing', 'header', 'Content-Length', '0'],
      ['header-nl', 'header', 'X-Api-Key', `${CANARY_MCP_CREDENTIAL}\r\nX-Injected: 1`],
    ];
    for (const [ref, type, header, secret] of rows) {
      expect((await register({ server_ref: ref, url: mcp.url })).status).toBe(201);
      await tg.db.query('UPDATE mcp_servers SET credential_type = $3, credential_header = $4, credential_encrypted = $5 WHERE project_id = $1 AND server_ref = $2', [p.project.id, ref, type, header, seal(ref, secret)]);
    }
    const before = mcp.authorizations.length;
    for (const [ref] of rows) {
      const res = await toolCall(ref);
      expect(res.status).toBe(502);
      expect(res.json.error).toMatchObject({ code: 'upstream_error', details: { mcp_error: { code: 'invalid_credential' } } });
      expect(res.text).not.toContain(CANARY_MCP_CREDENTIAL);
      expect(res.text).not.toContain('second-line');
      const { evidence, stored } = await everythingAbout(res.json.error.details.permit_id);
      expect(evidence.json.data[0]).toMatchObject({ outcome: 'protocol_error' });
      expect(evidence.text).not.toContain(CANARY_MCP_CREDENTIAL);
      expect(stored).not.toContain(CANARY_MCP_CREDENTIAL);
      const stream = await streamCall(ref);
      expect(stream).toMatch(/^event: error$/m);
      expect(stream).not.toContain(CANARY_MCP_CREDENTIAL);
    }
    // Nothing was sent upstream with these credentials.
    expect(mcp.authorizations.length).toBe(before);
    expect(logFindings(token)).toEqual([]);
  });

  it('one deadline covers connect and initialize: a server that never answers initialize is answered 502 timeout, and its connection closed', async () => {
    expect((await register({ server_ref: 'stall', url: mcp.stallUrl })).status).toBe(201);
    const closed = mcp.stallClosed();
    const res = await toolCall('stall', { estimated_cost_usd_micros: 10 });
    expect(res.status).toBe(502);
    expect(res.json.error).toMatchObject({ code: 'upstream_error', details: { mcp_error: { code: 'timeout' } } });
    expect(mcp.stalls.received).toBeGreaterThan(0);
    // The upstream saw its connection closed (resolves on the server's own close event).
    await closed;
    const evidence = await call('GET', `/v1/permits/${res.json.error.details.permit_id}/mcp-tool-calls`, { key: p.clientKey });
    expect(evidence.json.data[0]).toMatchObject({ outcome: 'protocol_error', error: { code: 'timeout' } });
    // It waited for the deadline (a lower bound only: a slow machine can make it later, never earlier).
    expect(evidence.json.data[0].duration_ms).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
    const permit = await tg.db.query('SELECT reservation_state FROM permits WHERE id = $1', [res.json.error.details.permit_id]);
    expect(permit.rows[0].reservation_state).toBe('released');
  });
});
