/**
 * MCP connections pin the address the SSRF guard checked, as webhook deliveries do
 * (test/unit/webhooks/ssrf-signing.test.ts): a name that resolves to a public address when checked
 * and to a forbidden one when connecting (DNS rebinding) never reaches the second.
 */
import { callMcpTool } from '../../../src/mcp/client';
import { allowList, checkedAddresses, type Resolver } from '../../../src/webhooks/ssrf';
import { startTestMcpServer, type TestMcpServer } from './mcp-server';

describe('MCP calls connect to the address they checked', () => {
  let mcp: TestMcpServer;
  beforeAll(async () => {
    mcp = await startTestMcpServer();
  });
  afterAll(async () => mcp?.close());

  it('a DNS rebinding to a forbidden address after the check is refused; allow-listed, the same server is reached', async () => {
    // "localhost" so that a client resolving the name again on its own (the system resolver) would reach the server.
    const url = mcp.url.replace('127.0.0.1', 'localhost');
    let answers = 0;
    const rebinding: Resolver = async () => (++answers === 1 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
    await expect(checkedAddresses('localhost', allowList([]), rebinding)).resolves.toEqual([{ address: '93.184.216.34', family: 4 }]);

    const before = mcp.authorizations.length;
    const refused = await callMcpTool({ url, headers: {}, secrets: [], allow: allowList([]), resolve: rebinding }, 'add', { a: 1, b: 2 }, { timeoutMs: 5000 });
    expect(refused).toMatchObject({ kind: 'protocol_error' });
    expect(mcp.authorizations.length).toBe(before);

    const reached = await callMcpTool({ url, headers: {}, secrets: [], allow: allowList(['127.0.0.1']), resolve: rebinding }, 'add', { a: 1, b: 2 }, { timeoutMs: 5000 });
    expect(reached).toMatchObject({ kind: 'result', isError: false, result: { content: [{ type: 'text', text: '3' }] } });
  });
});
