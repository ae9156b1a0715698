import { cursorPage, decodeCursor, encodeCursor } from '../cursor';
import { errors, parseOrThrow } from '../errors';
import { authOf } from '../middleware/auth';
import { routeFamily } from '../route-table';
import {
  CALL_METRICS_MAX_BUCKETS,
  CALL_METRICS_MAX_WINDOW_SECONDS,
  callListQuery,
  callListSchema,
  callMetricsQuery,
  callMetricsSchema,
  callSchema,
  governanceMetricsQuery,
  governanceMetricsSchema,
} from '../schemas/calls';
import { callMetrics } from '../../db/repositories/call-metrics';
import { findCall, listCalls, type CallLogEntry } from '../../db/repositories/calls';
import { notFoundOrArchived } from '../../retention/archived';
import { governanceMetrics } from '../../db/repositories/governance-metrics';
import type { Clock } from '../../clock';

function callView(r: CallLogEntry) {
  return {
    id: r.id,
    object: 'call' as const,
    created_at: r.created_at.toISOString(),
    completed_at: r.completed_at.toISOString(),
    duration_ms: r.duration_ms,
    route: r.route,
    operation: r.operation,
    mode: r.mode,
    status: r.status,
    status_code: r.status_code,
    provider: r.provider,
    model: r.model,
    usage: { input_tokens: r.input_tokens, output_tokens: r.output_tokens, cost_usd_micros: Number(r.cost_usd_micros), estimated_final: r.estimated_final },
    error: r.error_code ? { code: r.error_code } : null,
    permit_id: r.permit_id,
    key_id: r.key_id,
    workflow_id: r.intent_id,
    job_id: r.job_id,
    session_id: r.session_id,
  };
}

/** Opaque cursor (src/api/cursor.ts): `{"v":1,"t":<created_at, microseconds>,"id":<request id>}`. */
function decodeCallCursor(cursor: string): { createdAt: string; id: string } {
  const c = decodeCursor(cursor, ['t', 'id'], (c) => !Number.isNaN(Date.parse(c.t)));
  return { createdAt: c.t, id: c.id };
}

/** A metrics window `[from, to)`: `to` defaults to now, `from` to an hour before it; at most 31 days. */
function metricsWindow(q: { from?: string; to?: string }, clock: Clock): { from: Date; to: Date; invalid: (path: string, message: string) => Error } {
  const to = q.to ? new Date(q.to) : clock.now();
  const from = q.from ? new Date(q.from) : new Date(to.getTime() - 3600_000);
  const invalid = (path: string, message: string) => errors.validation([{ path: `query.${path}`, message, code: 'invalid_window' }]);
  if (from >= to) throw invalid('from', 'from must be before to');
  if ((to.getTime() - from.getTime()) / 1000 > CALL_METRICS_MAX_WINDOW_SECONDS) throw invalid('from', 'the window is at most 31 days');
  return { from, to, invalid };
}

export const callRoutes = routeFamily('Calls', () => ({}), [
  {
    method: 'get',
    path: '/v1/calls',
    stability: 'Beta',
    auth: 'key',
    members: true,
    summary: "The request log: the project's governed calls, newest first",
    query: callListQuery,
    response: callListSchema,
    handler: async (ctx, { deps }) => {
      const auth = authOf(ctx);
      const q = parseOrThrow(callListQuery, ctx.query, 'query');
      if (q.created_at_gte && q.created_at_lte && Date.parse(q.created_at_gte) > Date.parse(q.created_at_lte)) {
        throw errors.validation([{ path: 'query.created_at_gte', message: 'created_at_gte must not be after created_at_lte', code: 'invalid_window' }]);
      }
      const { created_at_gte: gte, created_at_lte: lte, cursor, limit, ...match } = q;
      const rows = await listCalls(deps.db, auth.projectId, {
        match,
        createdAtGte: gte ? new Date(gte) : undefined,
        createdAtLte: lte ? new Date(lte) : undefined,
        after: cursor ? decodeCallCursor(cursor) : undefined,
        limit: limit + 1,
      });
      ctx.body = cursorPage(rows, q.limit, callView, (last) => encodeCursor({ t: last.cursor_ts, id: last.id }));
    },
  },
  {
    method: 'get',
    path: '/v1/calls/:call_id',
    stability: 'Beta',
    auth: 'key',
    members: true,
    summary: 'One governed call of the request log',
    response: callSchema,
    handler: async (ctx, { deps }) => {
      const auth = authOf(ctx);
      const row = await findCall(deps.db, auth.projectId, ctx.params.call_id);
      if (!row) throw await notFoundOrArchived(deps.db, auth.projectId, { what: 'Call', id: ctx.params.call_id });
      ctx.body = callView(row);
    },
  },
  {
    method: 'get',
    path: '/v1/metrics/calls',
    stability: 'Beta',
    auth: 'key',
    members: true,
    summary: "The Overview's aggregates: calls per bucket by status, latency, rates, spend by model and by key",
    query: callMetricsQuery,
    response: callMetricsSchema,
    handler: async (ctx, { deps }) => {
      const auth = authOf(ctx);
      const q = parseOrThrow(callMetricsQuery, ctx.query, 'query');
      const { from, to, invalid } = metricsWindow(q, deps.clock);
      const seconds = (to.getTime() - from.getTime()) / 1000;
      // Bounded so a chart stays readable and the series query stays small.
      if (Math.ceil(seconds / q.bucket_seconds) > CALL_METRICS_MAX_BUCKETS) {
        throw invalid('bucket_seconds', `at most ${CALL_METRICS_MAX_BUCKETS} buckets per window: use bucket_seconds >= ${Math.ceil(seconds / CALL_METRICS_MAX_BUCKETS)}`);
      }
      const m = await callMetrics(deps.db, auth.projectId, { from, to, bucketSeconds: q.bucket_seconds });
      ctx.body = { object: 'call_metrics', window: { from: from.toISOString(), to: to.toISOString(), bucket_seconds: q.bucket_seconds }, ...m };
    },
  },
  {
    method: 'get',
    path: '/v1/metrics/governance',
    stability: 'Beta',
    auth: 'key',
    members: true,
    summary: "The Governance page's aggregates: decisions by decision and reason code, firewall actions by action and category (counts only, never prompt text)",
    query: governanceMetricsQuery,
    response: governanceMetricsSchema,
    handler: async (ctx, { deps }) => {
      const auth = authOf(ctx);
      const q = parseOrThrow(governanceMetricsQuery, ctx.query, 'query');
      const { from, to } = metricsWindow(q, deps.clock);
      const m = await governanceMetrics(deps.db, auth.projectId, from, to);
      ctx.body = { object: 'governance_metrics', window: { from: from.toISOString(), to: to.toISOString() }, ...m };
    },
  },
]);
