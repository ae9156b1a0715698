/**
 * The request log: a project's governed calls, newest first, read from their execution rows
 * (one per call; src/executions/record.ts writes them). Served by `executions_project_created_idx`
 * (project_id, created_at DESC): filters narrow the index range scan, the cursor starts it.
 */
import type { Queryable } from '../pool';
import type { ExecutionRecord } from './executions';

export type CallRecord = Omit<ExecutionRecord, 'envelope' | 'recorded_at' | 'idempotency_key'> & { cursor_ts: string };

export interface CallFilters {
  status?: ExecutionRecord['status'];
  route?: ExecutionRecord['route'];
  provider?: string;
  model?: string;
  keyId?: string;
  workflowId?: string;
  jobId?: string;
  createdAtGte?: Date;
  createdAtLte?: Date;
  /** The last call of the previous page: its created_at (microseconds, ISO) and id. */
  after?: { createdAt: string; id: string };
  limit: number;
}

const COLUMNS = `id, project_id, route, operation, mode, status, status_code, permit_id, provider, model, workflow_intent_id,
  key_id, job_id, input_tokens, output_tokens, cost_usd_micros, estimated_final, error_code, created_at, completed_at, duration_ms,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_ts`;

export async function listCalls(db: Queryable, projectId: string, f: CallFilters): Promise<CallRecord[]> {
  const where = ['project_id = $1'];
  const params: unknown[] = [projectId];
  const add = (sql: string, v: unknown) => {
    params.push(v);
    where.push(sql.replaceAll('?', `$${params.length}`));
  };
  if (f.status) add('status = ?', f.status);
  if (f.route) add('route = ?', f.route);
  if (f.provider) add('provider = ?', f.provider);
  if (f.model) add('model = ?', f.model);
  if (f.keyId) add('key_id = ?', f.keyId);
  if (f.workflowId) add('workflow_intent_id = ?', f.workflowId);
  if (f.jobId) add('job_id = ?', f.jobId);
  if (f.createdAtGte) add('created_at >= ?', f.createdAtGte);
  if (f.createdAtLte) add('created_at <= ?', f.createdAtLte);
  if (f.after) {
    // Spelled out rather than as a row comparison, so the index bounds the scan by created_at.
    add('created_at <= ?::timestamptz', f.after.createdAt);
    params.push(f.after.id);
    where.push(`(created_at < $${params.length - 1}::timestamptz OR id < $${params.length})`);
  }
  params.push(f.limit);
  const { rows } = await db.query<CallRecord>(
    `SELECT ${COLUMNS} FROM executions WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
    params,
  );
  return rows;
}

export async function findCall(db: Queryable, projectId: string, id: string): Promise<CallRecord | null> {
  const { rows } = await db.query<CallRecord>(`SELECT ${COLUMNS} FROM executions WHERE project_id = $1 AND id = $2`, [projectId, id]);
  return rows[0] ?? null;
}

export interface CallMetricsBucket {
  start: string;
  completed: number;
  failed: number;
  denied: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

export interface CallMetrics {
  series: CallMetricsBucket[];
  totals: {
    calls: number;
    completed: number;
    failed: number;
    denied: number;
    error_rate: number;
    denial_rate: number;
    p50_ms: number | null;
    p95_ms: number | null;
    cost_usd_micros: number;
  };
  by_model: { provider: string; model: string | null; calls: number; cost_usd_micros: number }[];
  by_key: { key_id: string | null; calls: number; cost_usd_micros: number }[];
}

const round = (v: unknown) => (v === null || v === undefined ? null : Math.round(Number(v)));

/**
 * The Overview's aggregates over `[from, to)` in two queries, each one range scan of
 * `executions_project_created_idx` bounded by the window (so the cost follows the calls in the
 * window, not the table): the buckets and the totals as grouping sets of one scan, spend by model
 * and by key as grouping sets of another. Latency percentiles leave denials out: a denied call
 * never reached a provider, and its few milliseconds would pull the percentiles down exactly when
 * things go wrong.
 */
export async function callMetrics(db: Queryable, projectId: string, from: Date, to: Date, bucketSeconds: number): Promise<CallMetrics> {
  const where = 'project_id = $1 AND created_at >= $2 AND created_at < $3';
  const [series, spend] = await Promise.all([
    // `start` is NULL on the totals row only: created_at is never NULL.
    db.query<{ start: Date | null; completed: number; failed: number; denied: number; p50: number | null; p95: number | null; cost: string }>(
      `SELECT start,
              count(*) FILTER (WHERE status = 'completed')::int AS completed,
              count(*) FILTER (WHERE status = 'failed')::int AS failed,
              count(*) FILTER (WHERE status = 'denied')::int AS denied,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE status <> 'denied') AS p50,
              percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE status <> 'denied') AS p95,
              COALESCE(sum(cost_usd_micros), 0)::bigint AS cost
       FROM (SELECT date_bin(make_interval(secs => $4), created_at, $2) AS start, status, duration_ms, cost_usd_micros
             FROM executions WHERE ${where}) AS e
       GROUP BY GROUPING SETS ((start), ())`,
      [projectId, from, to, bucketSeconds],
    ),
    db.query<{ by_key: boolean; provider: string | null; model: string | null; key_id: string | null; calls: number; cost: string }>(
      `SELECT GROUPING(provider, model) = 3 AS by_key, provider, model, key_id,
              count(*)::int AS calls, COALESCE(sum(cost_usd_micros), 0)::bigint AS cost
       FROM executions WHERE ${where}
       GROUP BY GROUPING SETS ((provider, model), (key_id))
       ORDER BY cost DESC, calls DESC, provider, model, key_id`,
      [projectId, from, to],
    ),
  ]);

  // Every bucket of the window, empty ones as zeros, so a chart's time axis has no gaps.
  const found = new Map(series.rows.filter((r) => r.start !== null).map((r) => [new Date(r.start!).getTime(), r]));
  const buckets: CallMetricsBucket[] = [];
  for (let t = from.getTime(); t < to.getTime(); t += bucketSeconds * 1000) {
    const r = found.get(t);
    buckets.push({
      start: new Date(t).toISOString(),
      completed: r ? Number(r.completed) : 0,
      failed: r ? Number(r.failed) : 0,
      denied: r ? Number(r.denied) : 0,
      p50_ms: r ? round(r.p50) : null,
      p95_ms: r ? round(r.p95) : null,
    });
  }
  const a = series.rows.find((r) => r.start === null)!;
  const calls = Number(a.completed) + Number(a.failed) + Number(a.denied);
  const rate = (n: number) => (calls === 0 ? 0 : n / calls);
  return {
    series: buckets,
    totals: {
      calls,
      completed: Number(a.completed),
      failed: Number(a.failed),
      denied: Number(a.denied),
      error_rate: rate(Number(a.failed)),
      denial_rate: rate(Number(a.denied)),
      p50_ms: round(a.p50),
      p95_ms: round(a.p95),
      cost_usd_micros: Number(a.cost),
    },
    // A call without a provider (a denial before routing) counts under its key only.
    by_model: spend.rows
      .filter((r) => !r.by_key && r.provider !== null)
      .map((r) => ({ provider: r.provider!, model: r.model, calls: Number(r.calls), cost_usd_micros: Number(r.cost) })),
    by_key: spend.rows.filter((r) => r.by_key).map((r) => ({ key_id: r.key_id, calls: Number(r.calls), cost_usd_micros: Number(r.cost) })),
  };
}
