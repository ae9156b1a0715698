/**
 * One tool call through the official MCP SDK client over streamable HTTP: connect (initialize),
 * tools/call, close. A result with `isError` is the tool's own failure; a thrown error (transport,
 * JSON-RPC error, deadline) is a protocol error. Both are returned, never thrown.
 *
 * One deadline covers the whole call (connect, initialize, the initialized notification and the
 * tool call): the SDK's own per-request timeouts start again at each step, so a server that stalls
 * initialize would otherwise hold the caller for the SDK default (60 s) before the tool call's own
 * timeout even starts. When the deadline passes, the pending request is aborted and the transport
 * closed, which aborts its fetch and so closes the upstream connection.
 *
 * Error text from upstream (response bodies, fetch errors) can quote the credential: it is scrubbed
 * of every form of the server's secrets before it leaves this function (evidence, events, logs and
 * the caller's response all take it from here).
 */
import { scrubSecrets } from './credentials';
import { guardedFetch, type AllowList, type Resolver } from '../webhooks/ssrf';

/** The documented deadline of one MCP call; MCP_CALL_TIMEOUT_MS may lower it, never raise it. */
export const MCP_CALL_TIMEOUT_MS = 30_000;

export type McpCallOutcome =
  | { kind: 'result'; result: Record<string, unknown>; isError: boolean }
  | { kind: 'protocol_error'; error: { code: string | number; message: string } };

export interface McpTarget {
  url: string;
  headers: Record<string, string>;
  /** Every configured secret of the server (scrubbed from error text). */
  secrets: string[];
  /** The SSRF guard's allow-list: the connection goes only to an address the guard admitted. */
  allow: AllowList;
  /** Tests: the name resolver the guard uses. */
  resolve?: Resolver;
}

class DeadlineExceeded extends Error {}

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
  const timeoutMs = Math.min(opts.timeoutMs ?? MCP_CALL_TIMEOUT_MS, MCP_CALL_TIMEOUT_MS);
  const client = new Client({ name: 'tollgate', version: '1' });
  // The connection goes to the address the guard checked, resolved once: a DNS answer that changes
  // between the check and the connection (rebinding) cannot reach an internal address.
  const pinned = guardedFetch(target.allow, target.resolve);
  const transport = new StreamableHTTPClientTransport(new URL(target.url), { requestInit: { headers: target.headers }, fetch: pinned.fetch });
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  // Settles only by rejecting: the race below answers at the deadline whatever step the SDK is in.
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new DeadlineExceeded(`MCP call exceeded its ${timeoutMs} ms deadline (connect, initialize and tool call)`);
      abort.abort(err);
      reject(err);
    }, timeoutMs);
  });
  deadline.catch(() => undefined);
  // Each SDK request also gets the signal, and a timeout no shorter than the deadline (the deadline fires first).
  const requestOptions = { signal: abort.signal, timeout: timeoutMs + 1000 };
  const run = async () => {
    await client.connect(transport, requestOptions);
    return client.callTool({ name: tool, arguments: args }, undefined, { ...requestOptions, ...(opts.onProgress ? { onprogress: opts.onProgress } : {}) });
  };
  try {
    const result = await Promise.race([run(), deadline]);
    return { kind: 'result', result: result, isError: result.isError === true };
  } catch (err) {
    if (err instanceof DeadlineExceeded || abort.signal.aborted) {
      return { kind: 'protocol_error', error: { code: 'timeout', message: (abort.signal.reason as Error).message } };
    }
    const e = err as { code?: unknown; message?: unknown };
    const code = typeof e.code === 'number' || typeof e.code === 'string' ? e.code : 'transport_error';
    return { kind: 'protocol_error', error: { code, message: scrubSecrets(String(e.message ?? err), target.secrets).slice(0, 500) } };
  } finally {
    clearTimeout(timer);
    // Closing aborts the transport's in-flight fetch: the upstream sees its connection closed.
    await client.close().catch(() => undefined);
    await pinned.close().catch(() => undefined);
  }
}
