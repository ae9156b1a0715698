/**
 * An intent refused the call (X-Svc-Workflow-Id at its ceiling, not active, or unknown):
 * the denial is still a permit, with the intent's reason code and the workflow id, so timelines
 * and reconciliation see it. Idempotent per permit id. Shared by executions and proxies.
 */
import type { Clock } from '../clock';
import { Db, withTransaction } from '../db/pool';
import { appendEvents } from '../db/repositories/events';
import { findPermit, insertPermit } from '../db/repositories/permits';
import type { NormalizedRequest } from '../providers/types';
import { executionEvents } from './record';
import type { ExecutionInput, GovernOutcome } from './types';
import { RESERVATION_REASON_CODES, type ReservationDenial } from '../intents/reservation-outcome';
import type { IntentReservations } from '../intents/reservations';
import { findIntent } from '../db/repositories/intents';
import type { Queryable } from '../db/pool';

/** The denial an execution carries when the intent refuses its call. */
export function reservationDenial(reason: ReservationDenial | undefined, workflowId: string): NonNullable<ExecutionInput['reservationDenied']> {
  const r = reason ?? 'unknown';
  return {
    reason_code: RESERVATION_REASON_CODES[r],
    message:
      r === 'ceiling_reached'
        ? `Workflow ${workflowId} reached its max_calls ceiling`
        : r === 'not_active'
          ? `Workflow ${workflowId} is not active`
          : `Workflow ${workflowId} is not declared in this project`,
  };
}

export async function recordReservationDenial(
  deps: { db: Db; clock: Clock },
  input: ExecutionInput,
  req: NormalizedRequest,
): Promise<GovernOutcome> {
  const { db, clock } = deps;
  const denial = input.reservationDenied!;
  const out: GovernOutcome = { decision: 'deny', reason_code: denial.reason_code, display_reason: denial.message, actions: [] };
  if (await findPermit(db, input.projectId, input.permitId)) return out;
  const now = clock.now();
  await withTransaction(db, async (tx) => {
    await insertPermit(tx, {
      id: input.permitId,
      project_id: input.projectId,
      request_id: input.executionId,
      route: input.route,
      operation: req.operation,
      provider: req.provider,
      model: req.model,
      workflow_id: input.workflowIntentId,
      decision: 'deny',
      reason_code: denial.reason_code,
      display_reason: denial.message,
      decision_details: {
        decision: 'deny',
        code: denial.reason_code,
        reason: denial.message,
        reason_detail: { category: 'workflow_intent', kind: 'call_reservation', outcome: 'denied' },
      },
      actions: [],
      issued_at: now,
      metadata: { execution_id: input.executionId },
    });
    await appendEvents(tx, [
      {
        ...executionEvents(input)('permit.denied', now, req, { decision: 'deny', reason_code: denial.reason_code, reason: denial.message }),
        source: 'permits',
      },
    ]);
  });
  return out;
}

/** What joining a call to an intent came to: the lease it was taken from, or the intent's refusal. */
export interface IntentJoin {
  lease?: string;
  refusal?: NonNullable<ExecutionInput['reservationDenied']>;
}

/**
 * Joins one call to an intent the way every governed surface that accepts one does
 * (executions, execute and the proxies through the pipeline; jobs, permits and MCP tool calls
 * here): the call is taken from the intent's ceiling, or refused with the intent's reason code
 * (unknown in the project, not active, at max_calls).
 */
export async function joinIntent(reservations: Pick<IntentReservations, 'reserveCall'>, projectId: string, workflowId: string): Promise<IntentJoin> {
  const r = await reservations.reserveCall(projectId, workflowId);
  if (!r.granted) return { refusal: reservationDenial(r.reason, workflowId) };
  return r.lease ? { lease: r.lease } : {};
}

/**
 * Runs the governance of a call joined to an intent. If it throws, nothing was recorded: the call
 * taken from the intent is given back (when the intent's workflow was not yet told of it).
 */
export async function governJoined<T>(
  reservations: Pick<IntentReservations, 'giveBack'>,
  call: { projectId: string; workflowId: string | null | undefined; intent: IntentJoin },
  govern: () => Promise<T>,
): Promise<T> {
  try {
    return await govern();
  } catch (err) {
    if (call.intent.lease && call.workflowId) reservations.giveBack(call.projectId, call.workflowId, call.intent.lease);
    throw err;
  }
}

/** The same check without taking a call (dry runs): unknown or not active is a refusal. */
export async function checkIntent(db: Queryable, projectId: string, workflowId: string): Promise<IntentJoin> {
  const row = await findIntent(db, projectId, workflowId);
  if (!row) return { refusal: reservationDenial('unknown', workflowId) };
  if (row.status !== 'active') return { refusal: reservationDenial('not_active', workflowId) };
  return {};
}
