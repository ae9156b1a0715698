/** A real MCP server for the tests: the SDK's McpServer over StreamableHTTPServerTransport (stateless) on a free port. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface TestMcpServer {
  url: string;
  /** An endpoint that answers every request with HTTP 500 (protocol errors). */
  brokenUrl: string;
  /** An endpoint that answers HTTP 500 quoting the credential headers it received (plain, and x-api-key base64). */
  echoUrl: string;
  /** An endpoint that accepts every request and never answers it. */
  stallUrl: string;
  /** Requests the stall endpoint received, and how many of their connections were then closed. */
  stalls: { received: number; closed: number };
  /** Resolves once a stalled request's connection is closed by the client. */
  stallClosed(): Promise<void>;
  /** tools/call requests received, by tool name. */
  calls: Record<string, number>;
  /** Authorization headers seen. */
  authorizations: string[];
  close(): Promise<void>;
}

function build(calls: Record<string, number>): McpServer {
  const server = new McpServer({ name: 'test-tools', version: '1.0.0' });
  const count = (name: string) => (calls[name] = (calls[name] ?? 0) + 1);
  server.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => {
    count('add');
    return { content: [{ type: 'text', text: String(a + b) }] };
  });
  server.registerTool('fail', { description: 'Always reports a tool error' }, async () => {
    count('fail');
    return { content: [{ type: 'text', text: 'the database is down' }], isError: true };
  });
  server.registerTool('delete_everything', { description: 'Dangerous' }, async () => {
    count('delete_everything');
    return { content: [{ type: 'text', text: 'deleted' }] };
  });
  return server;
}

export async function startTestMcpServer(): Promise<TestMcpServer> {
  const calls: Record<string, number> = {};
  const authorizations: string[] = [];
  const stalls = { received: 0, closed: 0 };
  const closeWaiters: Array<() => void> = [];
  const httpServer = http.createServer(async (req, res) => {
    authorizations.push(String(req.headers.authorization ?? ''));
    if (req.url === '/stall') {
      // Reads the request (initialize) and never answers: only the client can end it.
      stalls.received += 1;
      req.resume();
      res.on('close', () => {
        stalls.closed += 1;
        closeWaiters.splice(0).forEach((w) => w());
      });
      return;
    }
    if (req.url === '/echo') {
      // An upstream that quotes what it was sent in its error (as some gateways and debug servers do).
      const key = String(req.headers['x-api-key'] ?? '');
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`rejected authorization=${req.headers.authorization ?? ''} x-api-key=${key} b64=${Buffer.from(key).toString('base64')}`);
      return;
    }
    if (req.url === '/broken') {
      // Not an MCP endpoint: every request fails at the protocol level.
      res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error');
      return;
    }
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const server = build(calls);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, raw ? JSON.parse(raw) : undefined);
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const port = (httpServer.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    brokenUrl: `http://127.0.0.1:${port}/broken`,
    echoUrl: `http://127.0.0.1:${port}/echo`,
    stallUrl: `http://127.0.0.1:${port}/stall`,
    stalls,
    stallClosed: () => new Promise<void>((resolve) => (stalls.closed > 0 ? resolve() : closeWaiters.push(resolve))),
    calls,
    authorizations,
    close: () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}
