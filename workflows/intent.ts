import {
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { IntentActivities } from '../activities/intents';
import {
  AmendArgs,
  CompleteArgs,
  DEFAULT_CAN_AFTER_UPDATES,
  IntentState,
  IntentWorkflowInput,
  LEASE_SETTLE_GRACE_MS,
  LeaseArgs,
  LeaseResult,
  amendUpdate,
  completeUpdate,
  leaseCallsUpdate,
  reserveCallsUpdate,
  stateQuery,
} from './intent-messages';
import { SA } from './search-attributes';
import { createLeaseBook, validateLeaseArgs } from './intent-leases';
import { IntentActor } from './intent-state';
import { STATE_MIRROR_ACTIVITY_OPTIONS, STATE_MIRROR_INTERVAL_MS } from './state-mirror';

const acts = proxyActivities<IntentActivities>(STATE_MIRROR_ACTIVITY_OPTIONS);

/** Marks runs with the call-lease main loop (docs/decisions/call-leases.md). */
const CALL_LEASES_PATCH = 'intent-call-leases';

/**
 * One run per declared intent (Temporal id `intent:<project_id>:<workflow_id>`). Owns the
 * version, the call counter, the ceiling, the expiry timer and amend/complete. Every state change is
 * mirrored to PostgreSQL by activities; the counter is written at most once a second and always
 * before continue-as-new, completion and expiry.
 */
export async function intentWorkflow(input: IntentWorkflowInput): Promise<IntentState> {
  const state: IntentState = { ...input.state, leases: { ...(input.state.leases ?? {}) }, closedLeases: { ...(input.state.closedLeases ?? {}) } };
  const leases = state.leases!;
  const canAfter = input.canAfterUpdates ?? DEFAULT_CAN_AFTER_UPDATES;
  const actor = new IntentActor(state);
  let persistedCalls = input.persistedActualCalls ?? state.actualCalls;
  const checkAmend = (args: AmendArgs) => actor.checkAmend(args);

  const book = createLeaseBook(state, acts);
  const { settling, room, committed, settle, revokeAndWait } = book;

  setHandler(
    leaseCallsUpdate,
    (args: LeaseArgs): Promise<LeaseResult> => {
      actor.handled();
      return book.request(args);
    },
    { validator: validateLeaseArgs },
  );

  setHandler(stateQuery, () => state);

  setHandler(
    reserveCallsUpdate,
    (n: number) => {
      actor.handled();
      return actor.reserve(n, room());
    },
    { validator: (n: number) => IntentActor.checkReserveBatch(n) },
  );

  setHandler(
    amendUpdate,
    async (args) => {
      // Validate and apply synchronously, so a second amend in the same activation sees version + 1.
      checkAmend(args);
      actor.handled();
      const { appliedAgainst, previous } = actor.amend(args);
      // A lower ceiling below what leases hold: the holders return them (reporting what they used)
      // before the amendment is answered; from then on grants follow the new ceiling.
      const shrink = state.maxCalls !== null && committed() > state.maxCalls ? revokeAndWait(Object.keys(leases)) : Promise.resolve();
      const [recorded] = await Promise.all([
        acts.recordIntentAmendment({
          projectId: state.projectId,
          workflowId: state.workflowId,
          amendmentId: args.amendmentId,
          appliedAgainstVersion: appliedAgainst,
          newVersion: state.version,
          previousExpectedCalls: previous.expected,
          newExpectedCalls: state.expectedCalls,
          previousMaxCalls: previous.max,
          newMaxCalls: state.maxCalls,
          reasonProvided: args.reasonProvided ?? null,
          projection: state.projection,
        }),
        shrink,
      ]);
      return {
        workflow_id: state.workflowId,
        status: state.status,
        version: state.version,
        amendment: recorded.amendment,
        projected_cost: recorded.projected_cost,
      };
    },
    { validator: checkAmend },
  );

  setHandler(
    completeUpdate,
    async (args) => {
      if (!actor.active) throw actor.notActive();
      actor.handled();
      // From here on no call is granted; outstanding leases are returned (or settled) first, so
      // the cached counter compared with the permit records is final.
      state.status = 'completed';
      await revokeAndWait(Object.keys(leases));
      const result = await acts.completeIntent({
        projectId: state.projectId,
        workflowId: state.workflowId,
        cachedActualCalls: state.actualCalls,
        reasonProvided: args.reasonProvided ?? null,
      });
      state.actualCalls = result.actual_calls;
      persistedCalls = state.actualCalls;
      upsertSearchAttributes([{ key: SA.status, value: 'completed' }]);
      return result;
    },
    {
      validator: (_args: CompleteArgs) => {
        if (!actor.active) throw actor.notActive();
      },
    },
  );

  const shouldContinueAsNew = () => actor.handledThisRun >= canAfter || workflowInfo().continueAsNewSuggested;
  let lastPersistAt = Number.NEGATIVE_INFINITY;

  // Runs started before call leases replay their original loop (its commands are in their
  // history); they switch to the loop below at their next continue-as-new.
  if (!patched(CALL_LEASES_PATCH)) {
    await loopBeforeLeases();
    await condition(allHandlersFinished);
    return state;
  }

  while (state.status === 'active') {
    const now = Date.now();
    if (state.expiresAtMs !== null && state.expiresAtMs - now <= 0) {
      state.status = 'expired';
      // Holders stop consuming at the expiry on their own (a lease never outlives the intent);
      // they report what they used before the final counter is written.
      await revokeAndWait(Object.keys(leases));
      await acts.expireIntent({ projectId: state.projectId, workflowId: state.workflowId, actualCalls: state.actualCalls });
      persistedCalls = state.actualCalls;
      upsertSearchAttributes([{ key: SA.status, value: 'expired' }]);
      break;
    }
    // Leases whose holder neither renewed nor returned them (a dead process).
    const due = Object.entries(leases)
      .filter(([id, l]) => !settling.has(id) && l.deadlineMs + LEASE_SETTLE_GRACE_MS <= now)
      .map(([id]) => id);
    if (due.length > 0) await settle(due);
    if (state.status !== 'active') break;

    if (state.actualCalls !== persistedCalls && Date.now() - lastPersistAt >= STATE_MIRROR_INTERVAL_MS) {
      const calls = state.actualCalls;
      lastPersistAt = Date.now();
      await persistCounter(calls);
      persistedCalls = calls;
    }
    if (shouldContinueAsNew()) {
      await condition(allHandlersFinished);
      // Full state carries over (version, counter, ceiling, expiry, open leases); the next run
      // persists any counter change since the last write.
      if (state.status === 'active') await nextRun();
      continue;
    }
    // Sleep until: a status change, continue-as-new, a new lease, the counter changing (or its
    // throttle elapsing), the expiry, or the earliest lease settlement.
    const timers: number[] = [];
    if (state.expiresAtMs !== null) timers.push(state.expiresAtMs);
    for (const [id, l] of Object.entries(leases)) if (!settling.has(id)) timers.push(l.deadlineMs + LEASE_SETTLE_GRACE_MS);
    const dirty = state.actualCalls !== persistedCalls;
    if (dirty) timers.push(lastPersistAt + STATE_MIRROR_INTERVAL_MS);
    const epoch = book.epoch;
    const wake = () => state.status !== 'active' || shouldContinueAsNew() || book.epoch !== epoch || (!dirty && state.actualCalls !== persistedCalls);
    if (timers.length === 0) await condition(wake);
    else {
      const until = Math.min(...timers) - Date.now();
      if (until > 0) await condition(wake, until);
    }
  }
  // Let in-flight handlers (complete's activity, a late amend) finish before the run closes.
  await condition(allHandlersFinished);
  return state;

  /**
   * The counter written to PostgreSQL, and the next run with the whole state. Not async: each hands
   * back the SDK's own promise, so its command is scheduled in the caller's step, as if written
   * there (an async helper's extra `await` moves the loops' commands past a concurrent update's by
   * a microtask, which the recorded histories do not replay).
   */
  function persistCounter(calls: number): Promise<void> {
    return acts.persistIntentCounter({ projectId: state.projectId, workflowId: state.workflowId, actualCalls: calls });
  }
  function nextRun(): Promise<never> {
    return continueAsNew<typeof intentWorkflow>({ ...input, state: { ...state, run: state.run + 1 }, persistedActualCalls: persistedCalls });
  }

  /** The main loop as it was before call leases (its commands in the same order, for replay of runs started then). */
  async function loopBeforeLeases(): Promise<void> {
    while (state.status === 'active') {
      const remaining = state.expiresAtMs === null ? null : state.expiresAtMs - Date.now();
      if (remaining !== null && remaining <= 0) {
        state.status = 'expired';
        await acts.expireIntent({ projectId: state.projectId, workflowId: state.workflowId, actualCalls: state.actualCalls });
        persistedCalls = state.actualCalls;
        upsertSearchAttributes([{ key: SA.status, value: 'expired' }]);
        break;
      }
      const wake = () => state.status !== 'active' || state.actualCalls !== persistedCalls || shouldContinueAsNew();
      if (remaining === null) await condition(wake);
      else await condition(wake, remaining);
      if (state.status !== 'active') break;

      if (state.actualCalls !== persistedCalls) {
        const calls = state.actualCalls;
        await persistCounter(calls);
        persistedCalls = calls;
      }
      if (shouldContinueAsNew()) {
        await condition(allHandlersFinished);
        if (state.status === 'active') await nextRun();
      }
      if (state.status === 'active' && !shouldContinueAsNew()) {
        const until = state.expiresAtMs === null ? STATE_MIRROR_INTERVAL_MS : Math.min(STATE_MIRROR_INTERVAL_MS, Math.max(0, state.expiresAtMs - Date.now()));
        if (until > 0) await condition(() => state.status !== 'active' || shouldContinueAsNew(), until);
      }
    }
  }
}
