/** Usage closeouts of permit-first calls (table permit_usage_reports). */
import type { Queryable } from '../pool';

export interface UsageReportRecord {
  permit_id: string;
  project_id: string;
  usage_idempotency_key: string;
  request_hash: string;
  status: 'completed' | 'failed';
  input_tokens: number;
  output_tokens: number;
  billed_cost_micros: number;
  verification: Record<string, unknown> | null;
  error: Record<string, unknown> | null;
  occurred_at: Date | null;
  reported_at: Date;
  reported_by: string;
  response: Record<string, unknown>;
}

export async function findUsageReport(db: Queryable, projectId: string, permitId: string): Promise<UsageReportRecord | null> {
  const { rows } = await db.query<UsageReportRecord>('SELECT * FROM permit_usage_reports WHERE project_id = $1 AND permit_id = $2', [projectId, permitId]);
  return rows[0] ?? null;
}

export async function listUsageReports(db: Queryable, projectId: string, permitIds: string[]): Promise<UsageReportRecord[]> {
  if (permitIds.length === 0) return [];
  const { rows } = await db.query<UsageReportRecord>(
    'SELECT * FROM permit_usage_reports WHERE project_id = $1 AND permit_id = ANY($2::text[]) ORDER BY reported_at',
    [projectId, permitIds],
  );
  return rows;
}

export async function insertUsageReport(db: Queryable, r: UsageReportRecord): Promise<void> {
  await db.query(
    `INSERT INTO permit_usage_reports (permit_id, project_id, usage_idempotency_key, request_hash, status, input_tokens, output_tokens,
       billed_cost_micros, verification, error, occurred_at, reported_at, reported_by, response)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
    [
      r.permit_id, r.project_id, r.usage_idempotency_key, r.request_hash, r.status, r.input_tokens, r.output_tokens, r.billed_cost_micros,
      r.verification === null ? null : JSON.stringify(r.verification), r.error === null ? null : JSON.stringify(r.error),
      r.occurred_at, r.reported_at, r.reported_by, JSON.stringify(r.response),
    ],
  );
}
