/**
 * Turn and action-permit decisions of a session. The session workflow decides the session's own
 * ceilings atomically (turn counter, cost ceiling over settled + reserved spend: ./ops-client.ts);
 * a granted turn then goes through project governance (firewall on the text, policy, budget
 * reservation) as a permit on route `sessions`; a governance non-allow gives the turn back.
 * Usage, when reported, is settled against both. Every turn leaves a call record
 * (./turn-record.ts). Decisions: docs/decisions/sessions.md.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApiError, errors } from '../errors';
import { newId } from '../ids';
import { countTokens, DEFAULT_OUTPUT_TOKENS_ESTIMATE } from '../pricing';
import type { Operation, ProviderId } from '../providers/types';
import { findSession, type SessionRecord } from '../db/repositories/sessions';
import { findSessionTurn, insertSessionTurn, settleSessionTurn, type SessionTurnRecord } from '../db/repositories/session-turns';
import type { PermitDecision } from '../governance';
import type { SessionDenial, SessionOp, SessionOpResult } from '../../workflows/session-messages';
import { checkIntent } from '../executions/reservation-denial';
import { sessionEvent } from './events';
import { sessionNotActive, type SessionServiceDeps } from './service';
import type { ActionPermitBody, TurnBody, UsageBody } from './schemas';
import { usageCostMicros, usageRecord } from './usage-cost';
import { turnView } from './view';
import { recordTurn } from './turn-record';

/** Governance operation of tool actions and managed MCP calls (policy rules match it). */
export const TOOL_OPERATION = 'tool.call' as Operation;

const DENIAL_CODES: Record<Exclude<SessionDenial, 'not_active'>, { code: string; reason: string }> = {
  max_turns_reached: { code: 'session.max_turns_reached', reason: 'The session reached its max_turns' },
  max_cost_exceeded: { code: 'session.max_cost_exceeded', reason: 'The turn would take the session past its max_cost_usd_micros' },
};

export const sha256Hex = (s: string) => createHash('sha256').update(s).digest('hex');
export const argumentsSha256 = (args: Record<string, unknown>) => sha256Hex(canonicalize(args) ?? '{}');

/** Sends one operation to the session's workflow; a closed workflow answers as not active. */
export async function applyOp(deps: SessionServiceDeps, s: SessionRecord, op: SessionOp): Promise<SessionOpResult> {
  try {
    return await deps.ops.apply(s.project_id, s.id, op);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError || err instanceof WorkflowUpdateFailedError || (err as Error)?.name === 'WorkflowNotFoundError') {
      const now = await findSession(deps.db, s.project_id, s.id);
      throw sessionNotActive(s.id, now && now.status !== 'active' ? now.status : 'closed');
    }
    throw err;
  }
}

/** Bookkeeping operations (release, settle) after the session closed change nothing there. */
async function applyQuietly(deps: SessionServiceDeps, s: SessionRecord, op: SessionOp): Promise<void> {
  await applyOp(deps, s, op).catch((err) => {
    if (!(err instanceof ApiError)) deps.logger.warn({ err, session_id: s.id }, 'session bookkeeping operation failed');
  });
}

function counters(s: SessionRecord, r: SessionOpResult) {
  return { status: r.status, turns: r.turns, spentMicros: r.spentMicros, reservedMicros: r.reservedMicros, maxTurns: s.max_turns, maxCostMicros: s.max_cost_usd_micros === null ? null : Number(s.max_cost_usd_micros) };
}

/**
 * Settles a turn's reported usage once: the turn row, the permit's reservation, the session's
 * spend. A turn's permit is settled by its call record's statement (./turn-record.ts); an
 * action's, which leaves no record, directly.
 */
export async function settleTurn(
  deps: SessionServiceDeps,
  s: SessionRecord,
  turn: SessionTurnRecord,
  opts: { usage: UsageBody; costMicros?: number; responseId?: string },
): Promise<SessionTurnRecord> {
  const { usage } = opts;
  if (turn.decision !== 'allow' || turn.settled_at) return turn;
  const cost = opts.costMicros ?? usageCostMicros(s.provider, s.model, usage) ?? Number(turn.estimated_cost_micros);
  const meters = usageRecord(usage);
  const record: Record<string, unknown> = { ...meters, ...(opts.responseId ? { response_id: opts.responseId } : {}) };
  const at = deps.clock.now();
  const first = await settleSessionTurn(deps.db, turn.id, {
    usage: record,
    costMicros: cost,
    at,
    events: [
      sessionEvent(s, 'session.turn_settled', { turn_id: turn.client_turn_id, turn_number: turn.turn_number, usage: record, cost_usd_micros: cost, estimated_cost_usd_micros: Number(turn.estimated_cost_micros) }, { at, permitId: turn.permit_id }),
    ],
  });
  const settled = { ...turn, usage: record, cost_usd_micros: cost, settled_at: turn.settled_at ?? at };
  if (first) {
    const actual = { costMicros: cost, inputTokens: meters.input_tokens + meters.input_audio_tokens, outputTokens: meters.output_tokens + meters.output_audio_tokens };
    if (turn.kind === 'turn') {
      const call = await recordTurn(deps, s, settled);
      // Its call was closed with the session before this report came (failed, usage_not_reported):
      // the usage is still the project's spend, settled on its permit as any late report.
      if (call.status !== 'completed' && turn.permit_id) await deps.governance.settle(turn.permit_id, actual);
    } else if (turn.permit_id) {
      await deps.governance.settle(turn.permit_id, actual);
    }
    await applyQuietly(deps, s, { kind: 'settle', id: turn.id, actualMicros: cost });
  }
  return settled;
}

/** A turn or action to decide: its client id, its estimate and the columns its row keeps. */
interface DecisionRequest {
  kind: 'turn' | 'action';
  clientId: string | null;
  /** The intent the turn or action is governed under. */
  workflowId: string | null;
  estimateMicros: number | null;
  fields: { role?: string | null; tool_name?: string | null; arguments_sha256?: string | null };
}

interface Decided {
  row: SessionTurnRecord;
  result: SessionOpResult;
}

/**
 * The shared path of turns and actions: the session's ceilings (workflow), then governance, then
 * the decision row and its event. A non-allow gives the reservation back.
 */
async function decide(deps: SessionServiceDeps, s: SessionRecord, req: DecisionRequest, govern: (permitRequestId: string) => Promise<PermitDecision>): Promise<Decided> {
  const { kind, clientId, estimateMicros, fields } = req;
  const id = newId(kind === 'turn' ? 'sturn' : 'sact');
  const result = await applyOp(deps, s, { kind, id, estimateMicros: estimateMicros ?? 0 });
  if (!result.granted && result.reason === 'not_active') throw sessionNotActive(s.id, result.status);
  let decision: { decision: string; code: string; reason: string; permitId: string | null };
  if (!result.granted) {
    const d = DENIAL_CODES[result.reason as Exclude<SessionDenial, 'not_active'>];
    decision = { decision: 'deny', code: d.code, reason: d.reason, permitId: null };
  } else {
    const permit = await govern(s.id).catch(async (err) => {
      await applyQuietly(deps, s, { kind: 'release', id });
      throw err;
    });
    decision = { decision: permit.decision, code: permit.reason_code, reason: permit.display_reason, permitId: permit.permit_id };
    if (permit.decision !== 'allow') await applyQuietly(deps, s, { kind: 'release', id });
  }
  const allowed = decision.decision === 'allow';
  const at = deps.clock.now();
  const eventType = `session.${kind === 'turn' ? 'turn' : 'action'}_${allowed ? 'allowed' : 'denied'}`;
  const row = await insertSessionTurn(
    deps.db,
    {
      id, project_id: s.project_id, session_id: s.id, kind, client_turn_id: clientId, turn_number: allowed && kind === 'turn' ? (result.turnNumber ?? null) : null,
      role: fields.role ?? null, tool_name: fields.tool_name ?? null, arguments_sha256: fields.arguments_sha256 ?? null,
      decision: decision.decision, reason_code: decision.code, display_reason: decision.reason, permit_id: decision.permitId,
      estimated_cost_micros: estimateMicros ?? 0, created_at: at,
    },
    [sessionEvent(s, eventType, {
      decision: decision.decision, reason_code: decision.code, [kind === 'turn' ? 'turn_id' : 'action_id']: clientId,
      ...(kind === 'turn' ? { role: fields.role, turn_number: allowed ? (result.turnNumber ?? null) : null } : { tool_name: fields.tool_name, arguments_sha256: fields.arguments_sha256 }),
      estimated_cost_usd_micros: estimateMicros ?? 0,
    }, { at, permitId: decision.permitId })],
  );
  if (!row) {
    // The same client id was decided concurrently: that decision stands; give this one back.
    if (allowed) {
      await applyQuietly(deps, s, { kind: 'release', id });
      if (decision.permitId) await deps.governance.release(decision.permitId, 'duplicate_session_turn');
    }
    const first = clientId ? await findSessionTurn(deps.db, s.id, kind, clientId) : null;
    if (!first) throw errors.internal();
    return { row: first, result };
  }
  // A denied turn's call ends here: its record now (an allowed one's when its usage settles).
  if (kind === 'turn' && !allowed) await recordTurn(deps, s, row, { workflowId: req.workflowId });
  return { row, result };
}

/**
 * The intent a turn or action is governed under: the one it names, checked as every surface checks
 * an intent (unknown or not active → 403 with the intent's reason code, as at session creation), and
 * it must be the session's when the session has one (409); else the session's.
 */
async function intentOf(deps: SessionServiceDeps, s: SessionRecord, named: string | undefined): Promise<string | null> {
  if (!named) return s.workflow_id;
  const { refusal } = await checkIntent(deps.db, s.project_id, named);
  if (refusal) throw new ApiError(403, refusal.reason_code, refusal.message, { details: { decision: 'deny', reason_code: refusal.reason_code, workflow_id: named } });
  if (s.workflow_id && s.workflow_id !== named) {
    throw errors.conflict('workflow_intent.mismatch', `This session is joined to intent ${s.workflow_id}; its turns and actions cannot name another`, { workflow_id: named, session_workflow_id: s.workflow_id });
  }
  return named;
}

/** POST /v1/sessions/{id}/turns (and the voice events that are turns). */
export async function takeTurn(deps: SessionServiceDeps, s: SessionRecord, body: TurnBody) {
  if (body.turn_id) {
    const existing = await findSessionTurn(deps.db, s.id, 'turn', body.turn_id);
    if (existing) {
      const settled = body.usage ? await settleTurn(deps, s, existing, { usage: body.usage }) : existing;
      return { replayed: true, body: turnView(settled) };
    }
  }
  if (s.status !== 'active') throw sessionNotActive(s.id, s.status);
  const workflowId = await intentOf(deps, s, body.workflow_id);
  const texts = [body.text, body.transcript].filter((t): t is string => typeof t === 'string' && t.length > 0);
  const inputTokens = body.usage ? (body.usage.input_tokens ?? 0) + (body.usage.input_audio_tokens ?? 0) : texts.reduce((n, t) => n + countTokens(t), 0);
  const outputTokens = body.usage ? (body.usage.output_tokens ?? 0) + (body.usage.output_audio_tokens ?? 0) : (body.estimated_output_tokens ?? DEFAULT_OUTPUT_TOKENS_ESTIMATE);
  const estimate = body.usage
    ? usageCostMicros(s.provider, s.model, body.usage)
    : usageCostMicros(s.provider, s.model, { input_tokens: inputTokens, output_tokens: outputTokens });
  const { row, result } = await decide(deps, s, { kind: 'turn', clientId: body.turn_id ?? null, workflowId, estimateMicros: estimate, fields: { role: body.role } }, (requestId) =>
    deps.governance.evaluate(
      {
        projectId: s.project_id, requestId, route: 'sessions', operation: 'generate.text', provider: s.provider as ProviderId, model: s.model,
        estimatedInputTokens: inputTokens, estimatedOutputTokens: outputTokens, estimatedCostMicros: estimate, workflowId,
        metadata: { session_id: s.id, role: body.role }, inspectableText: texts,
      },
      { persist: true, permitMetadata: { session_id: s.id, session_turn_id: body.turn_id ?? null } },
    ),
  );
  const settled = body.usage ? await settleTurn(deps, s, row, { usage: body.usage }) : row;
  return { replayed: false, body: turnView(settled, counters(s, result)) };
}

/** POST /v1/sessions/{id}/action-permits: a permit for a tool action, settled at its estimate. */
export async function permitAction(deps: SessionServiceDeps, s: SessionRecord, body: ActionPermitBody) {
  if (body.action_id) {
    const existing = await findSessionTurn(deps.db, s.id, 'action', body.action_id);
    if (existing) return { replayed: true, body: turnView(existing) };
  }
  if (s.status !== 'active') throw sessionNotActive(s.id, s.status);
  const workflowId = await intentOf(deps, s, body.workflow_id);
  const argsHash = body.arguments_sha256 ?? (body.arguments ? argumentsSha256(body.arguments) : null);
  const estimate = body.estimated_cost_usd_micros;
  const decision: DecisionRequest = { kind: 'action', clientId: body.action_id ?? null, workflowId, estimateMicros: estimate, fields: { tool_name: body.tool_name, arguments_sha256: argsHash } };
  const { row, result } = await decide(deps, s, decision, (requestId) =>
    deps.governance.evaluate(
      {
        projectId: s.project_id, requestId, route: 'sessions', operation: TOOL_OPERATION, provider: 'tool' as ProviderId, model: body.tool_name,
        estimatedInputTokens: 0, estimatedOutputTokens: 0, estimatedCostMicros: estimate, workflowId,
        metadata: { ...(body.metadata ?? {}), session_id: s.id, tool: body.tool_name },
      },
      { persist: true, permitMetadata: { session_id: s.id, session_action_id: body.action_id ?? null, arguments_sha256: argsHash } },
    ),
  );
  // An action's cost is its declared estimate: settled at once.
  const settled = await settleTurn(deps, s, row, { usage: {}, costMicros: estimate });
  return { replayed: false, body: turnView(settled, counters(s, result)) };
}
