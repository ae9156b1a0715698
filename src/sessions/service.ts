/**
 * Session lifecycle: start (row + session.started + sessionWorkflow), read (row overlaid with the
 * workflow's live counters), end (the workflow's `end` Update). Turns and action permits are in
 * ./turns.ts. Decisions: docs/decisions/sessions.md.
 */
import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/common';
import type { Clock } from '../clock';
import type { Db } from '../db/pool';
import type { Logger } from '../logger';
import type { KeyAuthContext } from '../auth-context';
import type { Governance } from '../governance';
import type { ProviderId } from '../providers/types';
import { ApiError, errors } from '../errors';
import { newId } from '../ids';
import { pricing } from '../pricing';
import { findSession, findSessionByIdempotencyKey, insertSession, SessionRecord } from '../db/repositories/sessions';
import { checkIntent } from '../executions/reservation-denial';
import {
  SESSION_FAILURES,
  SessionSnapshot,
  SessionWorkflowInput,
  endSessionUpdate,
  sessionStateQuery,
  sessionTemporalWorkflowId,
} from '../../workflows/session-messages';
import type { sessionWorkflow } from '../../workflows/session';
import { SA } from '../../workflows/search-attributes';
import { sessionEvent } from './events';
import { SessionOps } from './ops-client';
import type { CreateSessionBody } from './schemas';
import { liveCounters, sessionView } from './view';
import { queryWithin } from '../temporal/bounded-query';

export interface SessionServiceDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  governance: Governance;
  temporal: { client: Client; taskQueue: string };
  ops: SessionOps;
  /** Test-only: continue-as-new after this many handled Updates. */
  canAfterUpdates?: number;
}

export function sessionNotActive(id: string, status: string): ApiError {
  return errors.conflict('session.not_active', `Session ${id} is ${status}, not active`, { session_id: id, status });
}

export async function requireSession(deps: SessionServiceDeps, projectId: string, sessionId: string): Promise<SessionRecord> {
  const row = /^sess_[0-9a-f]{32}$/.test(sessionId) ? await findSession(deps.db, projectId, sessionId) : null;
  if (!row) throw errors.notFound('Session', sessionId);
  return row;
}

function resolveTarget(body: CreateSessionBody): { provider: ProviderId; model: string } {
  const r = pricing.resolveModel(body.model, body.provider);
  if (r === null || r === 'ambiguous') {
    throw errors.validation([{ path: 'model', message: `model "${body.model}" is ${r === null ? 'not priced' : 'offered by several providers; give provider'}`, code: 'invalid_value' }]);
  }
  return { provider: r.provider, model: r.model };
}

function workflowInput(r: SessionRecord, canAfterUpdates?: number): SessionWorkflowInput {
  const startedMs = new Date(r.started_at).getTime();
  return {
    snapshot: {
      projectId: r.project_id,
      sessionId: r.id,
      status: 'active',
      limits: {
        maxTurns: r.max_turns,
        maxCostMicros: r.max_cost_usd_micros === null ? null : Number(r.max_cost_usd_micros),
        expiresAtMs: r.expires_at ? new Date(r.expires_at).getTime() : null,
        idleTimeoutMs: r.idle_timeout_seconds * 1000,
      },
      turns: 0,
      spentMicros: 0,
      reservations: {},
      lastActivityMs: startedMs,
      endReason: null,
      run: 1,
      totalUpdatesHandled: 0,
      persisted: { turns: 0, spentMicros: 0 },
    },
    ...(canAfterUpdates ? { canAfterUpdates } : {}),
  };
}

async function ensureSessionWorkflow(deps: SessionServiceDeps, r: SessionRecord): Promise<void> {
  try {
    await deps.temporal.client.workflow.start<typeof sessionWorkflow>('sessionWorkflow', {
      workflowId: r.temporal_workflow_id,
      taskQueue: deps.temporal.taskQueue,
      args: [workflowInput(r, deps.canAfterUpdates)],
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      typedSearchAttributes: [{ key: SA.projectId, value: r.project_id }],
      staticSummary: `Session ${r.id} (project ${r.project_id}, ${r.provider}/${r.model})`,
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return;
    throw err;
  }
}

/** POST /v1/sessions: 201 with the new session, 200 with the one an idempotency key already started. */
export async function createSession(deps: SessionServiceDeps, auth: KeyAuthContext, body: CreateSessionBody): Promise<{ status: number; body: ReturnType<typeof sessionView> }> {
  if (body.idempotency_key) {
    const existing = await findSessionByIdempotencyKey(deps.db, auth.projectId, body.idempotency_key);
    if (existing) return { status: 200, body: sessionView(existing) };
  }
  const { provider, model } = resolveTarget(body);
  if (body.workflow_id) {
    // The same check, codes and status as every governed surface that accepts an intent
    // (src/executions/reservation-denial.ts); a session's turns take their calls later.
    const { refusal } = await checkIntent(deps.db, auth.projectId, body.workflow_id);
    if (refusal) throw new ApiError(403, refusal.reason_code, refusal.message, { details: { decision: 'deny', reason_code: refusal.reason_code, workflow_id: body.workflow_id } });
  }
  const id = newId('sess');
  // The model must pass the project's policy (allow-list, deny rules) before any turn is taken.
  const check = await deps.governance.evaluate(
    { projectId: auth.projectId, requestId: id, route: 'sessions', operation: 'generate.text', provider, model, estimatedInputTokens: 0, estimatedOutputTokens: 0, estimatedCostMicros: 0, workflowId: body.workflow_id ?? null, metadata: body.metadata },
    { persist: false },
  );
  if (check.decision === 'deny' && check.reason_code.startsWith('policy.')) {
    throw new ApiError(403, check.reason_code, check.display_reason, { details: { decision: check.decision, reason_code: check.reason_code, decision_details: check.decision_details } });
  }
  const now = deps.clock.now();
  const row = {
    id,
    project_id: auth.projectId,
    provider,
    model,
    modality: body.modality,
    workflow_id: body.workflow_id ?? null,
    max_turns: body.max_turns ?? null,
    max_cost_usd_micros: body.max_cost_usd_micros ?? null,
    max_duration_seconds: body.max_duration_seconds ?? null,
    idle_timeout_seconds: body.idle_timeout_seconds,
    metadata: body.metadata ?? {},
    created_by_key: auth.keyId,
    idempotency_key: body.idempotency_key ?? null,
    started_at: now,
    expires_at: body.max_duration_seconds ? new Date(now.getTime() + body.max_duration_seconds * 1000) : null,
    temporal_workflow_id: sessionTemporalWorkflowId(auth.projectId, id),
  };
  const started = sessionEvent({ project_id: auth.projectId, id, provider, model }, 'session.started', {
    modality: body.modality,
    workflow_id: row.workflow_id,
    max_turns: row.max_turns,
    max_cost_usd_micros: row.max_cost_usd_micros,
    max_duration_seconds: row.max_duration_seconds,
    idle_timeout_seconds: row.idle_timeout_seconds,
    started_by: { type: 'api_key', id: auth.keyId },
  }, { at: now });
  const inserted = await insertSession(deps.db, row, started);
  if (!inserted) {
    const winner = body.idempotency_key ? await findSessionByIdempotencyKey(deps.db, auth.projectId, body.idempotency_key) : null;
    if (!winner) throw errors.internal();
    return { status: 200, body: sessionView(winner) };
  }
  await ensureSessionWorkflow(deps, inserted);
  return { status: 201, body: sessionView(inserted) };
}

/** Live state by query while the workflow runs (bounded wait), else null. */
export async function liveSession(deps: SessionServiceDeps, projectId: string, sessionId: string): Promise<SessionSnapshot | null> {
  return queryWithin(deps.temporal.client.workflow.getHandle(sessionTemporalWorkflowId(projectId, sessionId)), sessionStateQuery);
}

export async function readSession(deps: SessionServiceDeps, projectId: string, sessionId: string) {
  const row = await requireSession(deps, projectId, sessionId);
  if (row.status !== 'active') return sessionView(row);
  const live = await liveSession(deps, projectId, sessionId);
  if (live && live.status !== 'active') return sessionView((await findSession(deps.db, projectId, sessionId)) ?? row);
  return sessionView(row, live ? liveCounters(live) : null);
}

/** POST /v1/sessions/{id}/end. */
export async function endSession(deps: SessionServiceDeps, projectId: string, sessionId: string, body: { status: 'ended' | 'failed'; reason?: string; error?: { code: string; message: string } }) {
  const row = await requireSession(deps, projectId, sessionId);
  if (row.status !== 'active') throw sessionNotActive(row.id, row.status);
  const handle = deps.temporal.client.workflow.getHandle(row.temporal_workflow_id);
  try {
    await handle.executeUpdate(endSessionUpdate, {
      args: [{ status: body.status, reason: body.reason ?? (body.status === 'failed' ? 'client_reported_failure' : 'client_ended'), error: body.error ?? null }],
    });
  } catch (err) {
    const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
    const closed = (cause instanceof ApplicationFailure && cause.type === SESSION_FAILURES.notActive) || err instanceof WorkflowNotFoundError;
    if (!closed) throw err;
    const now = await findSession(deps.db, projectId, sessionId);
    throw sessionNotActive(sessionId, now?.status ?? 'closed');
  }
  return sessionView((await findSession(deps.db, projectId, sessionId)) ?? row);
}
