/**
 * Realtime governance sessions (table `sessions`, migration 0140). The sessionWorkflow owns the
 * live counters; these rows are their durable mirror and the record reads fall back to.
 */
import type { Queryable } from '../pool';
import { appendEvents } from './events';
import type { NewEvent } from '../../events/types';

export const SESSION_STATUSES = ['active', 'ended', 'expired', 'failed'] as const;
export type StoredSessionStatus = (typeof SESSION_STATUSES)[number];

export interface SessionRecord {
  id: string;
  project_id: string;
  status: StoredSessionStatus;
  provider: string;
  model: string;
  modality: string;
  workflow_id: string | null;
  max_turns: number | null;
  max_cost_usd_micros: number | null;
  max_duration_seconds: number | null;
  idle_timeout_seconds: number;
  turns: number;
  spent_usd_micros: number;
  metadata: Record<string, string>;
  created_by_key: string;
  idempotency_key: string | null;
  end_reason: string | null;
  error: { code: string; message: string } | null;
  started_at: Date;
  expires_at: Date | null;
  ended_at: Date | null;
  temporal_workflow_id: string;
}

export type NewSession = Omit<SessionRecord, 'status' | 'turns' | 'spent_usd_micros' | 'end_reason' | 'error' | 'ended_at'>;

/** Inserts the session with its session.started event; null when the idempotency key already names one. */
export async function insertSession(db: Queryable, s: NewSession, started: NewEvent): Promise<SessionRecord | null> {
  const { rows } = await db.query<SessionRecord>(
    `INSERT INTO sessions (id, project_id, status, provider, model, modality, workflow_id, max_turns, max_cost_usd_micros,
       max_duration_seconds, idle_timeout_seconds, metadata, created_by_key, idempotency_key, started_at, expires_at, temporal_workflow_id)
     VALUES ($1, $2, 'active', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
     ON CONFLICT (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
     RETURNING *`,
    [s.id, s.project_id, s.provider, s.model, s.modality, s.workflow_id, s.max_turns, s.max_cost_usd_micros, s.max_duration_seconds,
      s.idle_timeout_seconds, JSON.stringify(s.metadata), s.created_by_key, s.idempotency_key, s.started_at, s.expires_at, s.temporal_workflow_id],
  );
  if (rows[0]) await appendEvents(db, [started]);
  return rows[0] ?? null;
}

export async function findSession(db: Queryable, projectId: string, sessionId: string): Promise<SessionRecord | null> {
  const { rows } = await db.query<SessionRecord>('SELECT * FROM sessions WHERE project_id = $1 AND id = $2', [projectId, sessionId]);
  return rows[0] ?? null;
}

export async function findSessionByIdempotencyKey(db: Queryable, projectId: string, key: string): Promise<SessionRecord | null> {
  const { rows } = await db.query<SessionRecord>('SELECT * FROM sessions WHERE project_id = $1 AND idempotency_key = $2', [projectId, key]);
  return rows[0] ?? null;
}

export async function updateSessionCounters(db: Queryable, c: { projectId: string; sessionId: string; turns: number; spentMicros: number }): Promise<void> {
  await db.query(`UPDATE sessions SET turns = $3, spent_usd_micros = $4 WHERE project_id = $1 AND id = $2 AND status = 'active'`, [
    c.projectId,
    c.sessionId,
    c.turns,
    c.spentMicros,
  ]);
}

/**
 * Moves an active session to its final status and appends the closing event in one transaction
 * step; false (and no event) when it was already closed, so a retried close writes once.
 */
export async function closeSessionRecord(
  db: Queryable,
  c: { projectId: string; sessionId: string; status: Exclude<StoredSessionStatus, 'active'>; reason: string; error: { code: string; message: string } | null; turns: number; spentMicros: number; at: Date },
  event: NewEvent,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE sessions SET status = $3, end_reason = $4, error = $5, turns = $6, spent_usd_micros = $7, ended_at = $8
     WHERE project_id = $1 AND id = $2 AND status = 'active'`,
    [c.projectId, c.sessionId, c.status, c.reason, c.error ? JSON.stringify(c.error) : null, c.turns, c.spentMicros, c.at],
  );
  if (!rowCount) return false;
  await appendEvents(db, [event]);
  return true;
}
