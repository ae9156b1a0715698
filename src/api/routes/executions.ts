import { z } from 'zod';
import { ApiError, errors, parseOrThrow } from '../errors';
import { authOf, keyAuthOf } from '../middleware/auth';
import { executionMetricsSchema } from '../schemas/integrity';
import { routeFamily } from '../route-table';
import { executionEnvelopeSchema, executionFailureSchema } from '../schemas/executions';
import { executionMetrics, findCallRecord } from '../../db/repositories/call-records';
import { ExecuteInputError, resolveExecuteTarget, translateExecuteInput } from '../../executions/execute-input';
import { planExecution } from '../../executions/routing';
import { ExecuteRequest, executeRequestSchema, ExecutionRequest, executionRequestSchema } from '../../executions/schema';
import { callerOf, runExecution, type PreparedExecution, type StreamSink } from '../../executions/service';
import type { ParameterizedContext } from 'koa';
import { notFoundOrArchived } from '../../retention/archived';

const metricsQuery = z
  .object({
    window_seconds: z.coerce.number().int().min(1).max(90 * 86400).optional(),
    from: z.string().datetime({ offset: true }).optional(),
    to: z.string().datetime({ offset: true }).optional(),
    route: z.enum(['executions', 'execute']).optional(),
  })
  .strict();

/** `mode: stream` needs an Accept that admits text/event-stream (absent and `*\/*` do). */
function acceptsEventStream(accept: string): boolean {
  if (!accept) return true;
  return /text\/event-stream|\*\/\*|text\/\*/i.test(accept);
}

/** The SSE response of a stream-mode execution, on Koa's raw response. */
function sseSink(ctx: ParameterizedContext): StreamSink {
  return {
    open(headers) {
      ctx.respond = false;
      ctx.status = 200;
      ctx.res.writeHead(200, headers);
    },
    write: (chunk) => void ctx.res.write(chunk),
    end: () => void ctx.res.end(),
    onClose(listener) {
      const onClose = () => {
        if (!ctx.res.writableEnded) listener();
      };
      ctx.res.on('close', onClose);
      return () => void ctx.res.off('close', onClose);
    },
  };
}

export const executionRoutes = routeFamily(
  'Executions',
  (deps) => {
    const { pricing } = deps;

    async function execute(ctx: ParameterizedContext, prep: PreparedExecution): Promise<void> {
      const caller = callerOf(keyAuthOf(ctx), (name) => ctx.get(name));
      const reply = await runExecution(deps, caller, prep, prep.mode === 'stream' ? sseSink(ctx) : undefined);
      if (!reply) return; // streamed
      ctx.status = reply.status;
      for (const [k, v] of Object.entries(reply.headers)) ctx.set(k, v);
      ctx.body = reply.body;
    }
    return { execute, pricing };
  },
  [
    {
      method: 'post',
      path: '/v1/executions',
      stability: 'GA',
      since: 'v1.0',
      auth: 'key',
      summary: 'Governed execution (sync, or stream with Accept: text/event-stream)',
      body: executionRequestSchema,
      response: executionEnvelopeSchema,
      errorBody: executionFailureSchema,
      handler: async (ctx, { execute, pricing }) => {
        const body = parseOrThrow(executionRequestSchema, ctx.request.body ?? {}) as ExecutionRequest;
        const mode = body.mode ?? 'sync';
        if (mode === 'stream' && !acceptsEventStream(ctx.get('accept'))) {
          throw new ApiError(406, 'not_acceptable', 'mode "stream" answers with Server-Sent Events; send "Accept: text/event-stream"');
        }
        await execute(ctx, { route: 'executions', mode, body, ...planExecution(body, pricing) });
      },
    },
    {
      method: 'post',
      path: '/v1/execute',
      stability: 'Beta',
      since: 'v1.3',
      auth: 'key',
      summary: 'Provider-shaped governed execution (sync only)',
      body: executeRequestSchema,
      response: executionEnvelopeSchema,
      errorBody: executionFailureSchema,
      handler: async (ctx, { execute, pricing }) => {
        const body: ExecuteRequest = parseOrThrow(executeRequestSchema, ctx.request.body ?? {});
        let target;
        let request;
        try {
          target = resolveExecuteTarget(body, pricing);
          request = translateExecuteInput(target.provider, target.model, body.input);
        } catch (err) {
          if (err instanceof ExecuteInputError) throw errors.validation([{ path: err.path, message: err.message, code: 'invalid_target' }]);
          throw err;
        }
        await execute(ctx, {
          route: 'execute',
          mode: 'sync',
          body,
          request,
          routing: {
            requested_provider: body.provider ?? null,
            requested_model: body.model,
            reason_code: target.reason_code,
            primary: { provider: target.provider, model: target.model },
            fallback: [],
          },
          resolved: { provider: target.provider, model: target.model, alias: target.alias },
        });
      },
    },
    {
      method: 'get',
      path: '/v1/executions/:request_id',
      stability: 'Beta',
      auth: 'key',
      summary: 'An execution envelope by request id',
      response: executionEnvelopeSchema,
      handler: async (ctx, { deps }) => {
        const auth = authOf(ctx);
        const record = await findCallRecord(deps.db, auth.projectId, ctx.params.request_id);
        if (!record) throw await notFoundOrArchived(deps.db, auth.projectId, { what: 'Execution', id: ctx.params.request_id });
        if (record.permit_id) ctx.set('x-svc-permit-id', record.permit_id);
        ctx.body = record.envelope;
      },
    },
    {
      method: 'get',
      path: '/v1/metrics/executions',
      stability: 'Beta',
      auth: 'key',
      summary: 'Execution counts and latency for a window',
      response: executionMetricsSchema,
      handler: async (ctx, { deps }) => {
        const auth = authOf(ctx);
        const q = parseOrThrow(metricsQuery, ctx.query, 'query');
        const to = q.to ? new Date(q.to) : deps.clock.now();
        const from = q.from ? new Date(q.from) : new Date(to.getTime() - (q.window_seconds ?? 86400) * 1000);
        if (from >= to) throw errors.validation([{ path: 'query.from', message: 'from must be before to', code: 'invalid_window' }]);
        ctx.body = { object: 'execution_metrics', project_id: auth.projectId, ...(await executionMetrics(deps.db, auth.projectId, { from, to, route: q.route })) };
      },
    },
  ],
);
