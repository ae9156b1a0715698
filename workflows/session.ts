import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { SessionActivities } from '../activities/sessions';
import {
  DEFAULT_SESSION_CAN_AFTER_UPDATES,
  EndArgs,
  MAX_OPS_PER_UPDATE,
  SESSION_FAILURES,
  SessionOp,
  SessionOpResult,
  SessionSnapshot,
  SessionWorkflowInput,
  applyOpsUpdate,
  endSessionUpdate,
  sessionStateQuery,
} from './session-messages';
import { SessionActor } from './session-state';
import { STATE_MIRROR_ACTIVITY_OPTIONS, STATE_MIRROR_INTERVAL_MS } from './state-mirror';

const acts = proxyActivities<SessionActivities>(STATE_MIRROR_ACTIVITY_OPTIONS);

function invalid(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: SESSION_FAILURES.invalid, message, nonRetryable: true });
}

function validOp(op: SessionOp): boolean {
  if (!op || typeof op !== 'object') return false;
  if (op.kind === 'touch') return true;
  if (typeof op.id !== 'string' || op.id.length < 1 || op.id.length > 100) return false;
  const amount = (n: unknown) => Number.isInteger(n) && (n as number) >= 0 && (n as number) <= Number.MAX_SAFE_INTEGER;
  if (op.kind === 'turn' || op.kind === 'action') return amount(op.estimateMicros);
  if (op.kind === 'settle') return amount(op.actualMicros);
  return op.kind === 'release';
}

/**
 * One run per session (Temporal id `session:<project_id>:<session_id>`). Owns the turn counter,
 * the spend and reservations, the ceilings, the idle and duration timers and the end. The API
 * coalesces each process's operations on a session into one `applyOps` Update at a time, so a busy
 * session stays far below the server's 10 in-flight Updates; the run continues as new well before
 * 2,000 Updates. Counters are mirrored to PostgreSQL at most once a second and at close.
 */
export async function sessionWorkflow(input: SessionWorkflowInput): Promise<SessionSnapshot> {
  const actor = new SessionActor({ ...input.snapshot, reservations: { ...input.snapshot.reservations } });
  const s = actor.s;
  const canAfter = input.canAfterUpdates ?? DEFAULT_SESSION_CAN_AFTER_UPDATES;
  let handledThisRun = 0;
  let closing = false;

  setHandler(sessionStateQuery, () => s);

  setHandler(
    applyOpsUpdate,
    (ops: SessionOp[]): SessionOpResult[] => {
      handledThisRun++;
      s.totalUpdatesHandled++;
      const now = Date.now();
      return ops.map((op) => actor.apply(op, now));
    },
    {
      validator: (ops: SessionOp[]) => {
        if (!Array.isArray(ops) || ops.length < 1 || ops.length > MAX_OPS_PER_UPDATE || !ops.every(validOp)) {
          throw invalid(`applyOps takes 1..${MAX_OPS_PER_UPDATE} well-formed operations`);
        }
      },
    },
  );

  setHandler(
    endSessionUpdate,
    async (args: EndArgs): Promise<SessionSnapshot> => {
      handledThisRun++;
      s.totalUpdatesHandled++;
      actor.end(args);
      await closeRun(args.error ?? null);
      return s;
    },
    {
      validator: (args: EndArgs) => {
        if (!args || (args.status !== 'ended' && args.status !== 'failed') || typeof args.reason !== 'string') throw invalid('end needs a status and a reason');
        if (!actor.active || closing) {
          throw ApplicationFailure.create({ type: SESSION_FAILURES.notActive, message: `Session ${s.sessionId} is ${s.status}`, details: [{ status: s.status }], nonRetryable: true });
        }
      },
    },
  );

  /** Records the close: counters, released reservations, the session.ended/failed event. */
  async function closeRun(error: { code: string; message: string } | null): Promise<void> {
    closing = true;
    await acts.closeSession({
      projectId: s.projectId,
      sessionId: s.sessionId,
      status: s.status as 'ended' | 'expired' | 'failed',
      reason: s.endReason ?? 'ended',
      error,
      turns: s.turns,
      spentMicros: s.spentMicros,
    });
    s.reservations = {};
    s.persisted = { turns: s.turns, spentMicros: s.spentMicros };
  }

  const shouldContinueAsNew = () => handledThisRun >= canAfter || workflowInfo().continueAsNewSuggested;
  let lastPersistAt = Number.NEGATIVE_INFINITY;

  while (actor.active) {
    const expiry = actor.nextExpiry();
    if (Date.now() >= expiry.atMs) {
      actor.close('expired', expiry.reason);
      await closeRun(null);
      break;
    }
    if (actor.dirty() && Date.now() - lastPersistAt >= STATE_MIRROR_INTERVAL_MS) {
      const counters = { turns: s.turns, spentMicros: s.spentMicros };
      lastPersistAt = Date.now();
      await acts.persistSessionCounters({ projectId: s.projectId, sessionId: s.sessionId, ...counters });
      if (actor.active) s.persisted = counters;
      continue;
    }
    if (shouldContinueAsNew()) {
      await condition(allHandlersFinished);
      if (actor.active) await continueAsNew<typeof sessionWorkflow>({ ...input, snapshot: { ...s, run: s.run + 1 } });
      continue;
    }
    // Sleep until: the session closes, continue-as-new is due, the counters change (or their
    // write throttle elapses), or the idle/duration expiry (which activity pushes back).
    const dirty = actor.dirty();
    const activity = s.lastActivityMs;
    const timers = [expiry.atMs];
    if (dirty) timers.push(lastPersistAt + STATE_MIRROR_INTERVAL_MS);
    const wake = () => !actor.active || shouldContinueAsNew() || (!dirty && actor.dirty()) || s.lastActivityMs !== activity;
    const until = Math.min(...timers) - Date.now();
    if (until > 0) await condition(wake, until);
  }
  // Let in-flight handlers (end's activity) finish before the run closes.
  await condition(allHandlersFinished);
  return s;
}
