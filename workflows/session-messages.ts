/**
 * Messages of sessionWorkflow, shared by the workflow, the API's coalescing client and the routes.
 * Only definitions and plain types here (no workflow APIs are called at import time).
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';

export type SessionStatus = 'active' | 'ended' | 'expired' | 'failed';

/** Failure types the validators throw (ApplicationFailure.type); the API maps them. */
export const SESSION_FAILURES = {
  notActive: 'session.not_active',
  invalid: 'session.invalid_request',
} as const;

/** Handled Updates per run before continue-as-new (the server allows 2,000 per run). */
export const DEFAULT_SESSION_CAN_AFTER_UPDATES = 500;
/** Most operations one applyOps Update carries (the API coalesces concurrent callers into one). */
export const MAX_OPS_PER_UPDATE = 200;

export interface SessionLimits {
  maxTurns: number | null;
  maxCostMicros: number | null;
  /** Epoch ms (workflow time) after which the session expires; null without max_duration_seconds. */
  expiresAtMs: number | null;
  idleTimeoutMs: number;
}

export interface SessionSnapshot {
  projectId: string;
  sessionId: string;
  status: SessionStatus;
  limits: SessionLimits;
  /** Turns granted (a released turn is given back). */
  turns: number;
  /** Settled spend of the session's turns and actions. */
  spentMicros: number;
  /** Reserved by granted, unsettled turns and actions, by operation id. */
  reservations: Record<string, { micros: number; turn: boolean }>;
  lastActivityMs: number;
  endReason: string | null;
  /** Runs so far (+1 per continue-as-new) and Updates handled across runs. */
  run: number;
  totalUpdatesHandled: number;
  /** Counters last written to PostgreSQL (carried across continue-as-new). */
  persisted: { turns: number; spentMicros: number };
}

/**
 * One decision or bookkeeping step. `id` is chosen by the API (the turn or action id), so a
 * re-sent operation is recognised and not counted twice.
 */
export type SessionOp =
  | { kind: 'turn'; id: string; estimateMicros: number }
  | { kind: 'action'; id: string; estimateMicros: number }
  | { kind: 'release'; id: string }
  | { kind: 'settle'; id: string; actualMicros: number }
  | { kind: 'touch' };

export type SessionDenial = 'max_turns_reached' | 'max_cost_exceeded' | 'not_active';

export interface SessionOpResult {
  granted: boolean;
  reason?: SessionDenial;
  /** 1-based number of a granted turn. */
  turnNumber?: number;
  status: SessionStatus;
  turns: number;
  spentMicros: number;
  reservedMicros: number;
}

export interface EndArgs {
  status: 'ended' | 'failed';
  reason: string;
  error?: { code: string; message: string } | null;
}

export interface SessionWorkflowInput {
  snapshot: SessionSnapshot;
  canAfterUpdates?: number;
}

export const applyOpsUpdate = defineUpdate<SessionOpResult[], [SessionOp[]]>('applyOps');
export const endSessionUpdate = defineUpdate<SessionSnapshot, [EndArgs]>('end');
export const sessionStateQuery = defineQuery<SessionSnapshot>('state');

/** Temporal workflow id of a session. */
export function sessionTemporalWorkflowId(projectId: string, sessionId: string): string {
  return `session:${projectId}:${sessionId}`;
}
