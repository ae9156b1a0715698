import type { ParameterizedContext } from 'koa';
import { ApiError, errors, parseOrThrow } from '../errors';
import { authOf, keyAuthOf } from '../middleware/auth';
import { mcpServerListSchema, mcpServerSchema, mcpToolCallListSchema, mcpToolCallSchema } from '../schemas/sessions';
import { routeFamily } from '../route-table';
import { deleteMcpServer, findMcpServer, listMcpServers } from '../../db/repositories/mcp-servers';
import { listMcpToolCallsByPermit, listMcpToolCallsBySession } from '../../db/repositories/mcp-tool-calls';
import { findPermit } from '../../db/repositories/permits';
import { sessionServiceDeps } from '../session-deps';
import { requireSession } from '../../sessions/service';
import { callTool, toolCallView } from '../../mcp/call';
import { changeServer, registerServer, serverView } from '../../mcp/registry';
import { SERVER_REF_PATTERN, createServerSchema, toolCallSchema, updateServerSchema } from '../../mcp/schemas';

const body = (ctx: ParameterizedContext) => ctx.request.body ?? {};
const serverRef = (ctx: ParameterizedContext): string => {
  const ref = String((ctx.params as Record<string, string>).server_ref ?? '');
  if (!SERVER_REF_PATTERN.test(ref)) throw errors.notFound('MCP server', ref);
  return ref;
};

/**
 * Managed MCP (issue 19). The registry is a management surface; the user-JWT management auth of
 * issue 16 had not landed when this was written, so it takes an admin-scoped project key like the
 * other admin routes. The `{tool_name}:call` segment is one Koa parameter (`:tool_call`) whose
 * value must end in `:call`. Design: docs/decisions/managed-mcp-tool-calls.md.
 */
export const mcpRoutes = routeFamily('MCP', (deps) => ({ mcp: { ...sessionServiceDeps(deps), config: deps.config, intentReservations: deps.intentReservations } }), [
  {
    method: 'post', path: '/v1/mcp/servers', stability: 'Management', auth: 'admin', status: 201, body: createServerSchema, summary: 'Register an MCP server (streamable HTTP URL, sealed credential, allowed tools)', response: mcpServerSchema,
    handler: async (ctx, { deps }) => {
      ctx.body = await registerServer(deps.db, deps.config, authOf(ctx).projectId, parseOrThrow(createServerSchema, body(ctx)));
    },
  },
  {
    method: 'get', path: '/v1/mcp/servers', stability: 'Management', auth: 'admin', summary: "The project's MCP servers", response: mcpServerListSchema,
    handler: async (ctx, { deps }) => {
      ctx.body = { object: 'list', data: (await listMcpServers(deps.db, authOf(ctx).projectId)).map(serverView) };
    },
  },
  {
    method: 'get', path: '/v1/mcp/servers/:server_ref', stability: 'Management', auth: 'admin', summary: 'An MCP server (the credential is never shown)', response: mcpServerSchema,
    handler: async (ctx, { deps }) => {
      const s = await findMcpServer(deps.db, authOf(ctx).projectId, serverRef(ctx));
      if (!s) throw errors.notFound('MCP server', ctx.params.server_ref);
      ctx.body = serverView(s);
    },
  },
  {
    method: 'patch', path: '/v1/mcp/servers/:server_ref', stability: 'Management', auth: 'admin', body: updateServerSchema, summary: 'Change an MCP server (URL, credential, allowed tools)', response: mcpServerSchema,
    handler: async (ctx, { deps }) => {
      ctx.body = await changeServer(deps.db, deps.config, { projectId: authOf(ctx).projectId, serverRef: serverRef(ctx) }, parseOrThrow(updateServerSchema, body(ctx)));
    },
  },
  {
    method: 'delete', path: '/v1/mcp/servers/:server_ref', stability: 'Management', auth: 'admin', status: 204, summary: 'Remove an MCP server (its call evidence stays)',
    handler: async (ctx, { deps }) => {
      if (!(await deleteMcpServer(deps.db, authOf(ctx).projectId, serverRef(ctx)))) throw errors.notFound('MCP server', ctx.params.server_ref);
    },
  },
  {
    method: 'post', path: '/v1/mcp/servers/:server_ref/tools/:tool_call', stability: 'Beta', auth: 'key', body: toolCallSchema,
    summary: 'Managed exact tool call: `{tool_call}` is `<tool_name>:call`. Governed (policy, budget, permit), called over streamable HTTP, recorded as evidence; "stream": true answers Server-Sent Events',
    response: mcpToolCallSchema,
    handler: async (ctx, { mcp }) => {
      const m = /^(.{1,200}):call$/.exec(ctx.params.tool_call ?? '');
      if (!m) throw errors.notFound('Route', ctx.path);
      const raw = body(ctx) as Record<string, unknown>;
      const header = ctx.get('idempotency-key');
      if (header && typeof raw.idempotency_key === 'string' && raw.idempotency_key !== header) {
        throw errors.validation([{ path: 'idempotency_key', message: 'differs from the Idempotency-Key header', code: 'custom' }]);
      }
      const workflowHeader = ctx.get('x-svc-workflow-id');
      const b = parseOrThrow(toolCallSchema, { ...raw, ...(header ? { idempotency_key: header } : {}), ...(workflowHeader && raw.workflow_id === undefined ? { workflow_id: workflowHeader } : {}) });
      const auth = keyAuthOf(ctx);
      if (!b.stream) {
        const reply = await callTool(mcp, auth, { serverRef: serverRef(ctx), tool: m[1], body: b });
        if (reply.replayed) ctx.set('idempotent-replayed', 'true');
        if (typeof reply.body.permit_id === 'string') ctx.set('x-svc-permit-id', reply.body.permit_id);
        ctx.status = reply.status;
        ctx.body = reply.body;
        return;
      }
      await streamCall(ctx, () =>
        callTool(mcp, auth, { serverRef: serverRef(ctx), tool: m[1], body: b }, {
          start: (meta) => writeEvent(ctx, 'start', meta),
          progress: (p) => writeEvent(ctx, 'progress', p),
        }),
      );
    },
  },
  {
    method: 'get', path: '/v1/permits/:permit_id/mcp-tool-calls', stability: 'Beta', auth: 'key', summary: 'Tool-call evidence of a permit', response: mcpToolCallListSchema,
    handler: async (ctx, { deps }) => {
      const auth = authOf(ctx);
      if (!(await findPermit(deps.db, auth.projectId, ctx.params.permit_id))) throw errors.notFound('Permit', ctx.params.permit_id);
      ctx.body = { object: 'list', data: (await listMcpToolCallsByPermit(deps.db, auth.projectId, ctx.params.permit_id)).map(toolCallView) };
    },
  },
  {
    method: 'get', path: '/v1/sessions/:session_id/mcp-tool-calls', stability: 'Beta', auth: 'key', summary: 'Tool-call evidence of a session', response: mcpToolCallListSchema,
    handler: async (ctx, { mcp }) => {
      const s = await requireSession(mcp, authOf(ctx).projectId, ctx.params.session_id);
      ctx.body = { object: 'list', data: (await listMcpToolCallsBySession(mcp.db, s.project_id, s.id)).map(toolCallView) };
    },
  },
]);

function writeEvent(ctx: ParameterizedContext, event: string, data: unknown): void {
  if (!ctx.res.headersSent) {
    ctx.respond = false;
    ctx.res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive' });
  }
  if (!ctx.res.writableEnded) ctx.res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/** Stream mode: errors before the call started are ordinary JSON errors; after, an `error` event. */
async function streamCall(ctx: ParameterizedContext, run: () => Promise<{ body: Record<string, unknown> }>): Promise<void> {
  try {
    const reply = await run();
    writeEvent(ctx, 'result', reply.body);
  } catch (err) {
    if (!ctx.res.headersSent) throw err;
    const e = err instanceof ApiError ? err.toBody() : { error: { code: 'internal_error', message: 'The tool call failed', details: {} } };
    writeEvent(ctx, 'error', e);
  }
  if (ctx.res.headersSent && !ctx.res.writableEnded) ctx.res.end();
}
