/**
 * A session turn's call record (docs/decisions/call-record.md, docs/decisions/sessions.md). Every
 * turn leaves one, written through the record path every governed call takes (`recordCall`,
 * `tollgate_record_calls`), so its chain leaf, the call rollup and the spend counters treat it as
 * any call's, and the request log lists it (route `sessions`, `session_id`):
 *
 * - a denied turn (the session's own ceilings, or governance) when it is decided: `denied`, with
 *   its `request.denied` row, as a denied execution;
 * - an allowed turn when its usage settles: `completed`, with the usage reported and its cost at
 *   the session's realtime prices. The record's statement settles the permit's reservation and the
 *   spend counters (the one place this happens); the session's own spend is its workflow's;
 * - an allowed turn still unsettled when the session closes, at the close: `failed`
 *   (`usage_not_reported`), its reservation released.
 *
 * The record's id is the turn's UUIDv7 under the call record's kind (`sturn_<hex>` →
 * `exec_req_<hex>`): whoever records a turn (its settle, the close, a retry of either) writes the
 * same row once, in the week partition of the turn's time.
 */
import type { Clock } from '../clock';
import type { Db } from '../db/pool';
import { CALL_ID_KIND } from '../ids';
import { pricing } from '../pricing';
import type { ProviderId } from '../providers/types';
import { makeUsage } from '../providers/shared/usage';
import { findPermit } from '../db/repositories/permits';
import type { SessionRecord } from '../db/repositories/sessions';
import { listUnrecordedTurns, type SessionTurnRecord } from '../db/repositories/session-turns';
import type { ExecutionEnvelope } from '../executions/envelope';
import { recordCall } from '../executions/record';
import type { GovernOutcome, RecordedCall, RecordInput } from '../executions/types';

export interface TurnRecordDeps {
  db: Db;
  clock: Clock;
}

const TURN_ID_PREFIX = 'sturn_';
const CALL_ID_PREFIX = `${CALL_ID_KIND}_`;

/** The call record id of a session turn: the same UUIDv7 under the record's kind. */
export function turnCallId(turnId: string): string {
  if (!turnId.startsWith(TURN_ID_PREFIX)) throw new Error(`not a session turn id: ${turnId}`);
  return CALL_ID_PREFIX + turnId.slice(TURN_ID_PREFIX.length);
}

/** The usage a turn settled, as a call record holds it: text and audio tokens together per direction. */
function settledUsage(t: SessionTurnRecord): { usage: ReturnType<typeof makeUsage>; costMicros: number } | null {
  if (!t.settled_at || !t.usage) return null;
  const u = t.usage as Record<string, number | undefined>;
  const usage = makeUsage({ input_tokens: (u.input_tokens ?? 0) + (u.input_audio_tokens ?? 0), output_tokens: (u.output_tokens ?? 0) + (u.output_audio_tokens ?? 0) });
  return { usage, costMicros: Number(t.cost_usd_micros ?? 0) };
}

/**
 * Records one turn (a no-op returning the stored envelope when it is recorded already).
 * `closedBy` is the release reason of an allowed turn the session closes unsettled; `workflowId`
 * the intent a turn denied by the session's ceilings named (it has no permit to read it from).
 */
export async function recordTurn(
  deps: TurnRecordDeps,
  s: SessionRecord,
  t: SessionTurnRecord,
  opts: { closedBy?: string; workflowId?: string | null } = {},
): Promise<ExecutionEnvelope> {
  const permit = t.permit_id ? await findPermit(deps.db, s.project_id, t.permit_id) : null;
  const target = { provider: s.provider as ProviderId, model: s.model };
  const input: RecordedCall = {
    executionId: turnCallId(t.id),
    permitId: t.permit_id,
    projectId: s.project_id,
    route: 'sessions',
    // A realtime provider streams its turns over the session's connection.
    mode: 'stream',
    createdAt: new Date(t.created_at).toISOString(),
    request: { operation: 'generate.text' },
    routing: { requested_provider: target.provider, requested_model: target.model, primary: target, fallback: [], reason_code: 'explicit_request' },
    workflowIntentId: permit ? permit.workflow_id : (opts.workflowId ?? s.workflow_id),
    idempotencyKey: null,
    // The key that started the session: a turn may settle on a later request, or at the close.
    keyId: s.created_by_key,
    sessionId: s.id,
    dispatchTimeoutMs: 0,
    heartbeatTimeoutMs: 0,
  };
  const gov: GovernOutcome = {
    decision: t.decision as GovernOutcome['decision'],
    reason_code: t.reason_code,
    display_reason: t.display_reason,
    actions: permit?.actions ?? [],
  };
  const rec: RecordInput =
    t.decision !== 'allow'
      ? { kind: 'governed_out', gov }
      : { kind: 'session_turn', gov, turn: { turnId: t.id, turnNumber: t.turn_number, settled: settledUsage(t), ...(opts.closedBy ? { closedBy: opts.closedBy } : {}) } };
  if (rec.kind === 'session_turn' && !rec.turn.settled && !opts.closedBy) throw new Error('recordTurn: an unsettled turn is recorded only when its session closes');
  return recordCall({ db: deps.db, clock: deps.clock, pricing }, input, rec);
}

/**
 * At the session's close: records every turn of the session that has no call record yet (the
 * unsettled ones, closed failed with their reservations released; any other whose recording a
 * crash interrupted). Returns how many were recorded now.
 */
export async function recordOpenTurns(deps: TurnRecordDeps, s: SessionRecord, closedBy: string): Promise<number> {
  const open = await listUnrecordedTurns(deps.db, s.id, { turnPrefix: TURN_ID_PREFIX, callPrefix: CALL_ID_PREFIX });
  // Together, so the records share the batcher's statements.
  await Promise.all(open.map((t) => recordTurn(deps, s, t, { closedBy })));
  return open.length;
}
