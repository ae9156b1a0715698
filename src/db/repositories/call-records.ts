import { Queryable } from '../pool';
import { envelopeOfRow, type ExecutionEnvelope, type ExecutionRoute } from '../../executions/envelope';
import type { Lifecycle, TurnLifecycle } from '../../executions/lifecycle';

export interface CallRecord {
  id: string;
  project_id: string;
  route: ExecutionRoute;
  operation: string;
  mode: 'sync' | 'stream';
  status: 'completed' | 'failed' | 'denied';
  status_code: number;
  permit_id: string | null;
  provider: string | null;
  model: string | null;
  intent_id: string | null;
  idempotency_key: string | null;
  key_id: string | null;
  job_id: string | null;
  /** The realtime session whose turn the call is (migration 0290). */
  session_id: string | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd_micros: number;
  estimated_final: boolean;
  error_code: string | null;
  created_at: Date;
  completed_at: Date;
  duration_ms: number;
  /** Rebuilt from the stored part and the columns (envelopeOfRow) by the reads here. */
  envelope: ExecutionEnvelope;
  recorded_at: Date;
  /** The record's place in its project's log (migration 0170); null for records whose events are stored rows. */
  seq: string | null;
  lifecycle: Lifecycle | TurnLifecycle | null;
}

export type NewCallRecord = Omit<CallRecord, 'recorded_at'>;

function withEnvelope(r: CallRecord): CallRecord {
  return { ...r, envelope: envelopeOfRow(r) };
}


export async function findCallRecord(db: Queryable, projectId: string, id: string): Promise<CallRecord | null> {
  const { rows } = await db.query<CallRecord>('SELECT * FROM calls WHERE project_id = $1 AND id = $2', [projectId, id]);
  return rows[0] ? withEnvelope(rows[0]) : null;
}

export async function findCallRecordById(db: Queryable, id: string): Promise<CallRecord | null> {
  const { rows } = await db.query<CallRecord>('SELECT * FROM calls WHERE id = $1', [id]);
  return rows[0] ? withEnvelope(rows[0]) : null;
}

export interface ExecutionMetrics {
  window: { from: string; to: string };
  total: number;
  counts: { completed: number; failed: number; denied: number };
  by_status_code: Record<string, number>;
  latency_ms: { p50: number | null; p95: number | null; p99: number | null; max: number | null };
  tokens: { input: number; output: number };
  spend: { total_usd_micros: number; by_provider_model: { provider: string; model: string; executions: number; cost_usd_micros: number; input_tokens: number; output_tokens: number }[] };
}

/** Counts, latency percentiles and spend over `[from, to)`, from the call records only (GET /v1/executions/metrics). */
export async function executionMetrics(db: Queryable, projectId: string, window: { from: Date; to: Date; route?: string }): Promise<ExecutionMetrics> {
  const { from, to, route } = window;
  const params = [projectId, from, to, route ?? null];
  const where = `project_id = $1 AND created_at >= $2 AND created_at < $3 AND ($4::text IS NULL OR route = $4)`;
  const [agg, codes, spend] = await Promise.all([
    db.query<Record<string, number | null>>(
      `SELECT count(*)::int AS total,
              count(*) FILTER (WHERE status = 'completed')::int AS completed,
              count(*) FILTER (WHERE status = 'failed')::int AS failed,
              count(*) FILTER (WHERE status = 'denied')::int AS denied,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
              percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95,
              percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) AS p99,
              max(duration_ms) AS max,
              COALESCE(sum(input_tokens), 0)::bigint AS input_tokens,
              COALESCE(sum(output_tokens), 0)::bigint AS output_tokens,
              COALESCE(sum(cost_usd_micros), 0)::bigint AS cost
       FROM calls WHERE ${where}`,
      params,
    ),
    db.query<{ status_code: number; n: number }>(
      `SELECT status_code, count(*)::int AS n FROM calls WHERE ${where} GROUP BY status_code ORDER BY status_code`,
      params,
    ),
    db.query<{ provider: string; model: string; executions: number; cost: number; input_tokens: number; output_tokens: number }>(
      // `executions`: the metrics answer's field name (the spec's), not the table's.
      `SELECT provider, model, count(*)::int AS executions, COALESCE(sum(cost_usd_micros), 0)::bigint AS cost,
              COALESCE(sum(input_tokens), 0)::bigint AS input_tokens, COALESCE(sum(output_tokens), 0)::bigint AS output_tokens
       FROM calls WHERE ${where} AND provider IS NOT NULL AND status <> 'denied'
       GROUP BY provider, model ORDER BY cost DESC, provider, model`,
      params,
    ),
  ]);
  const a = agg.rows[0];
  const round = (v: number | null | undefined) => (v === null || v === undefined ? null : Math.round(Number(v)));
  return {
    window: { from: from.toISOString(), to: to.toISOString() },
    total: Number(a.total),
    counts: { completed: Number(a.completed), failed: Number(a.failed), denied: Number(a.denied) },
    by_status_code: Object.fromEntries(codes.rows.map((r) => [String(r.status_code), Number(r.n)])),
    latency_ms: { p50: round(a.p50), p95: round(a.p95), p99: round(a.p99), max: round(a.max) },
    tokens: { input: Number(a.input_tokens), output: Number(a.output_tokens) },
    spend: {
      total_usd_micros: Number(a.cost),
      by_provider_model: spend.rows.map((r) => ({
        provider: r.provider,
        model: r.model,
        executions: Number(r.executions),
        cost_usd_micros: Number(r.cost),
        input_tokens: Number(r.input_tokens),
        output_tokens: Number(r.output_tokens),
      })),
    },
  };
}
