/**
 * One tool call through the official MCP SDK client over streamable HTTP: connect (initialize),
 * tools/call, close. A result with `isError` is the tool's own failure; a thrown error (transport,
 * JSON-RPC error, timeout) is a protocol error. Both are returned, never thrown.
 */

export const MCP_CALL_TIMEOUT_MS = 30_000;

export type McpCallOutcome =
  | { kind: 'result'; result: Record<string, unknown>; isError: boolean }
  | { kind: 'protocol_error'; error: { code: string | number; message: string } };

export interface McpTarget {
  url: string;
  headers: Record<string, string>;
}

export async function callMcpTool(
  target: McpTarget,
  tool: string,
  args: Record<string, unknown>,
  opts: { timeoutMs?: number; onProgress?: (p: { progress: number; total?: number; message?: string }) => void } = {},
): Promise<McpCallOutcome> {
  // The MCP SDK (with its JSON Schema validator) is loaded on the first MCP call, not by every process.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { Client } = require('@modelcontextprotocol/sdk/client/index.js') as typeof import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js') as typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const client = new Client({ name: 'tollgate', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(target.url), { requestInit: { headers: target.headers } });
  try {
    await client.connect(transport);
    const result = await client.callTool({ name: tool, arguments: args }, undefined, {
      timeout: opts.timeoutMs ?? MCP_CALL_TIMEOUT_MS,
      ...(opts.onProgress ? { onprogress: opts.onProgress } : {}),
    });
    return { kind: 'result', result: result, isError: result.isError === true };
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    const code = typeof e.code === 'number' || typeof e.code === 'string' ? e.code : 'transport_error';
    return { kind: 'protocol_error', error: { code, message: String(e.message ?? err).slice(0, 500) } };
  } finally {
    await client.close().catch(() => undefined);
  }
}
