import { Queryable } from '../pool';
import type { AmendmentChange } from '../../../workflows/intent-messages';

export type IntentStatus = 'active' | 'completed' | 'expired' | 'rejected';
export const INTENT_STATUSES: readonly IntentStatus[] = ['active', 'completed', 'expired', 'rejected'];

export interface IntentRecord {
  id: string;
  project_id: string;
  workflow_id: string;
  status: IntentStatus;
  version: number;
  expected_calls: number | null;
  max_calls: number | null;
  actual_calls: number;
  intent: Record<string, unknown>;
  canonical_intent_hash: string;
  projected_cost: Record<string, unknown>;
  reason_code: string | null;
  decision_details: Record<string, unknown> | null;
  declared_by: { type: string; id: string };
  declared_via: { sdk: string | null; sdk_version: string | null };
  declaration_signature_b64: string | null;
  signature_kid: string | null;
  budget_envelope_id: string | null;
  declared_at: Date;
  expires_at: Date | null;
  completed_at: Date | null;
  expired_at: Date | null;
  reconciliation: Record<string, unknown> | null;
  temporal_workflow_id: string | null;
  temporal_first_run_id: string | null;
  updated_at: Date;
}

export interface AmendmentRecord extends AmendmentChange {
  id: string;
  project_id: string;
  workflow_id: string;
  projected_cost: Record<string, unknown>;
  amendment_signature_b64: string;
  signature_kid: string;
  created_at: Date;
}

export type NewIntent = Omit<
  IntentRecord,
  'version' | 'actual_calls' | 'completed_at' | 'expired_at' | 'reconciliation' | 'temporal_first_run_id' | 'updated_at'
>;

/**
 * Inserts a declaration unless (project_id, workflow_id) exists. Returns the inserted row, or null
 * when another declaration holds the id (the unique constraint decides races).
 */
export async function insertIntent(db: Queryable, r: NewIntent): Promise<IntentRecord | null> {
  const { rows } = await db.query<IntentRecord>(
    `INSERT INTO intents (id, project_id, workflow_id, status, expected_calls, max_calls, intent, canonical_intent_hash,
       projected_cost, reason_code, decision_details, declared_by, declared_via, declaration_signature_b64, signature_kid,
       budget_envelope_id, declared_at, expires_at, temporal_workflow_id)
     VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19)
     ON CONFLICT (project_id, workflow_id) DO NOTHING
     RETURNING *`,
    [
      r.id,
      r.project_id,
      r.workflow_id,
      r.status,
      r.expected_calls,
      r.max_calls,
      JSON.stringify(r.intent),
      r.canonical_intent_hash,
      JSON.stringify(r.projected_cost),
      r.reason_code,
      r.decision_details === null ? null : JSON.stringify(r.decision_details),
      JSON.stringify(r.declared_by),
      JSON.stringify(r.declared_via),
      r.declaration_signature_b64,
      r.signature_kid,
      r.budget_envelope_id,
      r.declared_at,
      r.expires_at,
      r.temporal_workflow_id,
    ],
  );
  return rows[0] ?? null;
}

export async function findIntent(db: Queryable, projectId: string, workflowId: string): Promise<IntentRecord | null> {
  const { rows } = await db.query<IntentRecord>('SELECT * FROM intents WHERE project_id = $1 AND workflow_id = $2', [
    projectId,
    workflowId,
  ]);
  return rows[0] ?? null;
}

export async function setTemporalRunId(db: Queryable, projectId: string, workflowId: string, runId: string): Promise<void> {
  await db.query(
    'UPDATE intents SET temporal_first_run_id = $3 WHERE project_id = $1 AND workflow_id = $2 AND temporal_first_run_id IS NULL',
    [projectId, workflowId, runId],
  );
}

/** Mirrors the workflow's counter; a no-op once the intent left `active` (final values win). */
export async function persistActualCalls(db: Queryable, projectId: string, workflowId: string, actualCalls: number): Promise<void> {
  await db.query(
    `UPDATE intents SET actual_calls = $3, updated_at = now()
     WHERE project_id = $1 AND workflow_id = $2 AND status = 'active' AND actual_calls <> $3`,
    [projectId, workflowId, actualCalls],
  );
}

export async function listAmendments(db: Queryable, projectId: string, workflowId: string): Promise<AmendmentRecord[]> {
  const { rows } = await db.query<AmendmentRecord>(
    'SELECT * FROM intent_amendments WHERE project_id = $1 AND workflow_id = $2 ORDER BY applied_against_version',
    [projectId, workflowId],
  );
  return rows;
}

export interface IntentListFilters {
  status?: IntentStatus;
  createdAtGte?: Date;
  createdAtLte?: Date;
  limit: number;
  after?: { declaredAt: string; id: string };
}

/** Newest first; keyset pagination on (declared_at, id). `cursor_ts` keeps microseconds. */
export async function listIntents(
  db: Queryable,
  projectId: string,
  f: IntentListFilters,
): Promise<Array<IntentRecord & { cursor_ts: string; actual_cost_usd_micros: string }>> {
  const where = ['project_id = $1'];
  const params: unknown[] = [projectId];
  const add = (sql: string, v: unknown) => {
    params.push(v);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (f.status) add('status = ?', f.status);
  if (f.createdAtGte) add('declared_at >= ?', f.createdAtGte);
  if (f.createdAtLte) add('declared_at <= ?', f.createdAtLte);
  if (f.after) {
    params.push(f.after.declaredAt, f.after.id);
    where.push(`(declared_at, id) < ($${params.length - 1}::timestamptz, $${params.length})`);
  }
  params.push(f.limit);
  // The spend of a listed intent is the cost of its recorded calls, summed on the partial index
  // calls_project_intent_idx: the work follows the calls of the page's intents only.
  const { rows } = await db.query<IntentRecord & { cursor_ts: string; actual_cost_usd_micros: string }>(
    `SELECT w.*, to_char(w.declared_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_ts,
            (SELECT COALESCE(sum(e.cost_usd_micros), 0)::bigint FROM calls e
              WHERE e.project_id = w.project_id AND e.intent_id = w.workflow_id) AS actual_cost_usd_micros
     FROM intents w WHERE ${where.join(' AND ')}
     ORDER BY declared_at DESC, id DESC LIMIT $${params.length}`,
    params,
  );
  return rows;
}

export async function findAmendment(db: Queryable, amendmentId: string): Promise<AmendmentRecord | null> {
  const { rows } = await db.query<AmendmentRecord>('SELECT * FROM intent_amendments WHERE id = $1', [amendmentId]);
  return rows[0] ?? null;
}

export type NewAmendment = Omit<AmendmentRecord, 'created_at'> & { created_at: string };

export async function insertAmendment(db: Queryable, a: NewAmendment): Promise<AmendmentRecord> {
  const { rows } = await db.query<AmendmentRecord>(
    `INSERT INTO intent_amendments (id, project_id, workflow_id, applied_against_version, previous_expected_calls,
       new_expected_calls, previous_max_calls, new_max_calls, reason_provided, projected_cost, amendment_signature_b64,
       signature_kid, created_at)
     VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13) RETURNING *`,
    [
      a.id, a.project_id, a.workflow_id, a.applied_against_version, a.previous_expected_calls, a.new_expected_calls,
      a.previous_max_calls, a.new_max_calls, a.reason_provided, JSON.stringify(a.projected_cost), a.amendment_signature_b64,
      a.signature_kid, a.created_at,
    ],
  );
  return rows[0];
}

/** Moves the intent to an amended version (a no-op when it is already at or past it). */
export async function applyIntentVersion(
  db: Queryable,
  projectId: string,
  workflowId: string,
  v: { version: number; expectedCalls: number | null; maxCalls: number | null; projectedCost: Record<string, unknown> },
): Promise<void> {
  await db.query(
    `UPDATE intents SET version = $3, expected_calls = $4, max_calls = $5, projected_cost = $6, updated_at = now()
     WHERE project_id = $1 AND workflow_id = $2 AND version < $3`,
    [projectId, workflowId, v.version, v.expectedCalls, v.maxCalls, JSON.stringify(v.projectedCost)],
  );
}

export async function findIntentForUpdate(db: Queryable, projectId: string, workflowId: string): Promise<IntentRecord | null> {
  const { rows } = await db.query<IntentRecord>('SELECT * FROM intents WHERE project_id = $1 AND workflow_id = $2 FOR UPDATE', [projectId, workflowId]);
  return rows[0] ?? null;
}

/** Allowed permits carrying this workflow id: the authoritative count of the intent's calls. */
export async function countAllowedIntentCalls(db: Queryable, projectId: string, workflowId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM permits WHERE project_id = $1 AND workflow_id = $2 AND decision = 'allow'`,
    [projectId, workflowId],
  );
  return rows[0].n;
}

export async function markIntentCompleted(
  db: Queryable,
  projectId: string,
  workflowId: string,
  c: { at: Date; actualCalls: number; reconciliation: Record<string, unknown> },
): Promise<IntentRecord> {
  const { rows } = await db.query<IntentRecord>(
    `UPDATE intents SET status = 'completed', completed_at = $3, actual_calls = $4, reconciliation = $5, updated_at = now()
     WHERE project_id = $1 AND workflow_id = $2 RETURNING *`,
    [projectId, workflowId, c.at, c.actualCalls, JSON.stringify(c.reconciliation)],
  );
  return rows[0];
}

/** Moves an active intent to expired with its final counter. */
export async function markIntentExpired(db: Queryable, projectId: string, workflowId: string, e: { at: Date; actualCalls: number }): Promise<void> {
  await db.query(
    `UPDATE intents SET status = 'expired', expired_at = $3, actual_calls = $4, updated_at = now()
     WHERE project_id = $1 AND workflow_id = $2 AND status = 'active'`,
    [projectId, workflowId, e.at, e.actualCalls],
  );
}
