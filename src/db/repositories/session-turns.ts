/**
 * Turn and action-permit decisions of sessions (table `session_turns`, migration 0140). One row
 * per decision; `client_turn_id` (the caller's turn id, or the realtime item/response id) makes a
 * re-sent turn find its first decision.
 */
import type { Queryable } from '../pool';
import { appendEvents } from './events';
import type { NewEvent } from '../../events/types';

export interface SessionTurnRecord {
  id: string;
  project_id: string;
  session_id: string;
  kind: 'turn' | 'action';
  client_turn_id: string | null;
  turn_number: number | null;
  role: string | null;
  tool_name: string | null;
  arguments_sha256: string | null;
  decision: string;
  reason_code: string;
  display_reason: string;
  permit_id: string | null;
  estimated_cost_micros: number;
  usage: Record<string, unknown> | null;
  cost_usd_micros: number | null;
  settled_at: Date | null;
  created_at: Date;
}

export type NewSessionTurn = Omit<SessionTurnRecord, 'usage' | 'cost_usd_micros' | 'settled_at' | 'created_at'> & {
  usage?: Record<string, unknown> | null;
  cost_usd_micros?: number | null;
  settled_at?: Date | null;
  created_at: Date;
};

/** Inserts the decision and its events; null when the client turn id was already decided (a race). */
export async function insertSessionTurn(db: Queryable, t: NewSessionTurn, events: NewEvent[]): Promise<SessionTurnRecord | null> {
  const { rows } = await db.query<SessionTurnRecord>(
    `INSERT INTO session_turns (id, project_id, session_id, kind, client_turn_id, turn_number, role, tool_name, arguments_sha256, decision,
       reason_code, display_reason, permit_id, estimated_cost_micros, usage, cost_usd_micros, settled_at, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
     ON CONFLICT (session_id, kind, client_turn_id) WHERE client_turn_id IS NOT NULL DO NOTHING
     RETURNING *`,
    [t.id, t.project_id, t.session_id, t.kind, t.client_turn_id, t.turn_number, t.role, t.tool_name, t.arguments_sha256, t.decision,
      t.reason_code, t.display_reason, t.permit_id, t.estimated_cost_micros, t.usage ? JSON.stringify(t.usage) : null, t.cost_usd_micros ?? null,
      t.settled_at ?? null, t.created_at],
  );
  if (rows[0]) await appendEvents(db, events);
  return rows[0] ?? null;
}

export async function findSessionTurn(db: Queryable, sessionId: string, kind: 'turn' | 'action', clientTurnId: string): Promise<SessionTurnRecord | null> {
  const { rows } = await db.query<SessionTurnRecord>('SELECT * FROM session_turns WHERE session_id = $1 AND kind = $2 AND client_turn_id = $3', [sessionId, kind, clientTurnId]);
  return rows[0] ?? null;
}

/** The latest allowed, unsettled turn of a session (what a realtime response.done settles). */
export async function findOpenTurn(db: Queryable, sessionId: string): Promise<SessionTurnRecord | null> {
  const { rows } = await db.query<SessionTurnRecord>(
    `SELECT * FROM session_turns WHERE session_id = $1 AND kind = 'turn' AND decision = 'allow' AND settled_at IS NULL
     ORDER BY created_at DESC LIMIT 1`,
    [sessionId],
  );
  return rows[0] ?? null;
}

/** Records the settled usage once; false when the turn was already settled. */
export async function settleSessionTurn(db: Queryable, turnId: string, settle: { usage: Record<string, unknown>; costMicros: number; at: Date; events: NewEvent[] }): Promise<boolean> {
  const { usage, costMicros, at, events } = settle;
  const { rowCount } = await db.query(
    'UPDATE session_turns SET usage = $2, cost_usd_micros = $3, settled_at = $4 WHERE id = $1 AND settled_at IS NULL',
    [turnId, JSON.stringify(usage), costMicros, at],
  );
  if (!rowCount) return false;
  await appendEvents(db, events);
  return true;
}

/** Permits of a session's allowed, unsettled action permits (released when the session closes). */
export async function listUnsettledActionPermitIds(db: Queryable, sessionId: string): Promise<string[]> {
  const { rows } = await db.query<{ permit_id: string }>(
    `SELECT permit_id FROM session_turns
      WHERE session_id = $1 AND kind = 'action' AND decision = 'allow' AND settled_at IS NULL AND permit_id IS NOT NULL`,
    [sessionId],
  );
  return rows.map((r) => r.permit_id);
}

/**
 * A session's turns that have no call record yet (src/sessions/turn-record.ts): a turn's record id
 * is its id with `turnPrefix` replaced by `callPrefix`, a primary-key lookup per turn.
 */
export async function listUnrecordedTurns(db: Queryable, sessionId: string, ids: { turnPrefix: string; callPrefix: string }): Promise<SessionTurnRecord[]> {
  const { rows } = await db.query<SessionTurnRecord>(
    `SELECT t.* FROM session_turns t
      WHERE t.session_id = $1 AND t.kind = 'turn'
        AND NOT EXISTS (SELECT 1 FROM calls x WHERE x.id = ($3 || substr(t.id, length($2) + 1)) COLLATE "C")
      ORDER BY t.created_at, t.id`,
    [sessionId, ids.turnPrefix, ids.callPrefix],
  );
  return rows;
}

/** The turn a realtime response's usage settled (its `response_id`), so a re-sent response.done is recognised. */
export async function findTurnByResponseId(db: Queryable, sessionId: string, responseId: string): Promise<SessionTurnRecord | null> {
  const { rows } = await db.query<SessionTurnRecord>(
    `SELECT * FROM session_turns WHERE session_id = $1 AND kind = 'turn' AND (client_turn_id = $2 OR usage->>'response_id' = $2) LIMIT 1`,
    [sessionId, responseId],
  );
  return rows[0] ?? null;
}
