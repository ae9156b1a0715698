/**
 * The request log: a project's governed calls, newest first, read from their call records
 * (one per call; src/executions/record.ts writes them). Served by `calls_project_created_idx`
 * (project_id, created_at DESC): filters narrow the index range scan, the cursor starts it. The
 * rare-by-nature filters have partial indexes of their own (`calls_project_intent_idx`,
 * `calls_project_job_idx`, `calls_project_session_idx`).
 */
import type { Queryable } from '../pool';
import type { CallRecord } from './call-records';

export type CallLogEntry = Omit<CallRecord, 'envelope' | 'recorded_at' | 'idempotency_key'> & { cursor_ts: string };

/**
 * The request log's equality filters: each query parameter of GET /v1/calls and the column it
 * matches (the intent's id is `workflow_id` on the wire, as everywhere in the API).
 */
const CALL_MATCHES = {
  status: 'status',
  route: 'route',
  provider: 'provider',
  model: 'model',
  key_id: 'key_id',
  workflow_id: 'intent_id',
  job_id: 'job_id',
  session_id: 'session_id',
} as const;

export interface CallFilters {
  /** Equality filters by their query parameter's name. */
  match?: { [P in keyof typeof CALL_MATCHES]?: string };
  createdAtGte?: Date;
  createdAtLte?: Date;
  /** The last call of the previous page: its created_at (microseconds, ISO) and id. */
  after?: { createdAt: string; id: string };
  limit: number;
}

const COLUMNS = `id, project_id, route, operation, mode, status, status_code, permit_id, provider, model, intent_id,
  key_id, job_id, session_id, input_tokens, output_tokens, cost_usd_micros, estimated_final, error_code, created_at, completed_at, duration_ms,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_ts`;

export async function listCalls(db: Queryable, projectId: string, f: CallFilters): Promise<CallLogEntry[]> {
  const where = ['project_id = $1'];
  const params: unknown[] = [projectId];
  const add = (sql: string, v: unknown) => {
    params.push(v);
    where.push(sql.replaceAll('?', `$${params.length}`));
  };
  for (const [param, column] of Object.entries(CALL_MATCHES)) {
    const v = f.match?.[param as keyof typeof CALL_MATCHES];
    if (v) add(`${column} = ?`, v);
  }
  if (f.createdAtGte) add('created_at >= ?', f.createdAtGte);
  if (f.createdAtLte) add('created_at <= ?', f.createdAtLte);
  if (f.after) {
    // Spelled out rather than as a row comparison, so the index bounds the scan by created_at.
    add('created_at <= ?::timestamptz', f.after.createdAt);
    params.push(f.after.id);
    where.push(`(created_at < $${params.length - 1}::timestamptz OR id < $${params.length})`);
  }
  params.push(f.limit);
  const { rows } = await db.query<CallLogEntry>(
    `SELECT ${COLUMNS} FROM calls WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
    params,
  );
  return rows;
}

export async function findCall(db: Queryable, projectId: string, id: string): Promise<CallLogEntry | null> {
  const { rows } = await db.query<CallLogEntry>(`SELECT ${COLUMNS} FROM calls WHERE project_id = $1 AND id = $2`, [projectId, id]);
  return rows[0] ?? null;
}
