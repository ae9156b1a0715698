import {
  ApplicationFailure,
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
  INTENT_FAILURES,
  IntentState,
  IntentWorkflowInput,
  LEASE_SETTLE_GRACE_MS,
  LEASE_TTL_MS,
  LeaseArgs,
  LeaseResult,
  amendUpdate,
  completeUpdate,
  leaseCallsUpdate,
  reserveCallsUpdate,
  stateQuery,
} from './intent-messages';
import { SA } from './search-attributes';

const acts = proxyActivities<IntentActivities>({
  startToCloseTimeout: '30 seconds',
  // Persistence must eventually succeed: the workflow already changed its state.
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds' },
});

/** Minimum time between two writes of the call counter to PostgreSQL. */
const COUNTER_PERSIST_INTERVAL_MS = 1000;
const MAX_RESERVE_BATCH = 10_000;
/** Marks runs with the call-lease main loop (docs/decisions.md "Call leases"). */
const CALL_LEASES_PATCH = 'intent-call-leases';
/** Largest block one lease request is granted beyond the calls its holder is waiting for. */
const MAX_LEASE_PREFETCH = 100_000;

/**
 * One run per declared workflow intent (Temporal id `intent:<project_id>:<workflow_id>`). Owns the
 * version, the call counter, the ceiling, the expiry timer and amend/complete. Every state change is
 * mirrored to PostgreSQL by activities; the counter is written at most once a second and always
 * before continue-as-new, completion and expiry.
 */
export async function intentWorkflow(input: IntentWorkflowInput): Promise<IntentState> {
  const state: IntentState = { ...input.state, leases: { ...(input.state.leases ?? {}) } };
  const leases = state.leases!;
  const canAfter = input.canAfterUpdates ?? DEFAULT_CAN_AFTER_UPDATES;
  let handledThisRun = 0;
  let persistedCalls = input.persistedActualCalls ?? state.actualCalls;

  const notActive = () =>
    ApplicationFailure.create({
      type: INTENT_FAILURES.notActive,
      message: `Workflow ${state.workflowId} is ${state.status}, not active`,
      details: [{ status: state.status }],
      nonRetryable: true,
    });
  const checkAmend = (args: AmendArgs) => {
    if (state.status !== 'active') throw notActive();
    if (args.ifMatchVersion !== state.version) {
      throw ApplicationFailure.create({
        type: INTENT_FAILURES.versionConflict,
        message: `if_match_version ${args.ifMatchVersion} does not match the current version ${state.version}`,
        details: [{ current_version: state.version, if_match_version: args.ifMatchVersion }],
        nonRetryable: true,
      });
    }
  };

  // ---- Call leases -------------------------------------------------------------------------
  // Calls committed = consumed (reported) + the unconsumed part of every open lease ≤ maxCalls.
  let leaseEpoch = 0;
  const settling = new Set<string>();
  const committed = () => {
    let c = state.actualCalls;
    for (const l of Object.values(leases)) c += l.size - l.used;
    return c;
  };
  const room = () => (state.maxCalls === null ? Number.POSITIVE_INFINITY : Math.max(0, state.maxCalls - committed()));
  const report = (id: string, used: number) => {
    const l = leases[id];
    if (!l) return;
    const u = Math.min(l.size, Math.max(l.used, used));
    state.actualCalls += u - l.used;
    l.used = u;
  };
  const close = (id: string) => {
    delete leases[id];
  };
  const validFor = () => {
    const toExpiry = state.expiresAtMs === null ? LEASE_TTL_MS : state.expiresAtMs - Date.now();
    return Math.max(0, Math.min(LEASE_TTL_MS, toExpiry));
  };
  const leaseResult = (id: string, extra: Partial<LeaseResult> = {}): LeaseResult => {
    const l = leases[id];
    return {
      size: l?.size ?? 0,
      validForMs: l ? Math.max(0, l.deadlineMs - Date.now()) : 0,
      closed: !l,
      revoked: l?.revoking ?? false,
      status: state.status,
      actualCalls: state.actualCalls,
      maxCalls: state.maxCalls,
      ...extra,
    };
  };

  /** Leases whose holder did not return them: consumed = allowed permits carrying the lease id. */
  const settle = async (ids: string[]) => {
    const toSettle = ids.filter((id) => leases[id] && !settling.has(id));
    // Leases another handler (or the main loop) is settling right now: wait for that to finish.
    const elsewhere = ids.filter((id) => settling.has(id));
    if (toSettle.length === 0) {
      if (elsewhere.length > 0) await condition(() => elsewhere.every((id) => !settling.has(id)));
      return;
    }
    toSettle.forEach((id) => settling.add(id));
    try {
      const counts = await acts.countLeasePermits({ projectId: state.projectId, workflowId: state.workflowId, leaseIds: toSettle });
      for (const id of toSettle) {
        if (!leases[id]) continue;
        report(id, counts[id] ?? 0);
        close(id);
      }
    } finally {
      toSettle.forEach((id) => settling.delete(id));
      leaseEpoch++;
    }
    if (elsewhere.length > 0) await condition(() => elsewhere.every((id) => !settling.has(id)));
  };

  /**
   * Asks the holders of `ids` to return their leases (announced on PostgreSQL, so a live holder
   * stops consuming within milliseconds) and waits until they did, or until the leases' deadlines
   * plus the settlement grace passed (a dead holder), then settles what is left from permits.
   */
  const revokeAndWait = async (ids: string[], self?: string) => {
    const open = ids.filter((id) => leases[id]);
    if (open.length === 0) return;
    open.forEach((id) => (leases[id].revoking = true));
    await acts.notifyLeaseHolders({ projectId: state.projectId, workflowId: state.workflowId, leaseIds: open });
    const lastSettle = Math.max(...open.map((id) => leases[id]?.deadlineMs ?? 0)) + LEASE_SETTLE_GRACE_MS;
    const wait = lastSettle - Date.now();
    // A requester whose own lease is revoked meanwhile (two holders reclaiming from each other at
    // the ceiling) stops waiting: its holder can only return the lease once this Update answers.
    const selfRevoked = () => self !== undefined && !!leases[self]?.revoking;
    if (wait > 0) await condition(() => open.every((id) => !leases[id]) || selfRevoked(), wait);
    if (selfRevoked()) return;
    await settle(open.filter((id) => leases[id]));
  };

  /** Calls granted to a lease request: what the holder waits for first, a prefetch only while far from the ceiling. */
  const grantFor = (args: LeaseArgs): number => {
    const r = room();
    if (r <= 0) return 0;
    const others = Object.entries(leases).filter(([id, l]) => id !== args.leaseId && !l.revoking).length;
    // Half the room divided among holders: blocks shrink geometrically towards the ceiling, where
    // only the calls a holder is waiting for are granted (one by one for a single caller).
    const share = Math.floor(r / (2 * (others + 1)));
    return Math.min(r, Math.max(args.need, Math.min(args.want, share, MAX_LEASE_PREFETCH)));
  };

  setHandler(
    leaseCallsUpdate,
    async (args: LeaseArgs): Promise<LeaseResult> => {
      handledThisRun++;
      state.totalUpdatesHandled++;
      const id = args.leaseId;
      report(id, args.used);
      if (args.release) {
        close(id);
        return leaseResult(id);
      }
      if (leases[id]?.revoking) return leaseResult(id);
      if (state.status !== 'active') {
        if (leases[id]) leases[id].revoking = true;
        return leaseResult(id);
      }
      // A lease this workflow no longer has (settled after its deadline): the holder starts a new one.
      if (!leases[id] && args.used > 0) return leaseResult(id);
      // Past the expiry (the main loop has not run yet): nothing more is granted.
      if (state.expiresAtMs !== null && Date.now() >= state.expiresAtMs) {
        if (leases[id]) leases[id].revoking = true;
        return leaseResult(id, { status: 'expired' });
      }
      let grant = grantFor(args);
      if (grant === 0 && args.need > 0) {
        // At the ceiling while other holders may still have unconsumed calls: take them back
        // before refusing, so the last calls go to whoever is waiting for them.
        const reclaim = Object.entries(leases)
          .filter(([other, l]) => other !== id && l.size > l.used)
          .map(([other]) => other);
        if (reclaim.length > 0) {
          await revokeAndWait(reclaim, id);
          if (state.status !== 'active' || leases[id]?.revoking) return leaseResult(id, { revoked: !!leases[id] });
          grant = grantFor(args);
        }
      }
      const l = leases[id];
      if (grant > 0 || l) {
        const deadlineMs = Date.now() + validFor();
        if (l) {
          l.size += grant;
          l.deadlineMs = deadlineMs;
        } else {
          leases[id] = { holder: args.holder, size: grant, used: 0, deadlineMs, revoking: false };
          leaseEpoch++;
        }
      }
      return leaseResult(id);
    },
    {
      validator: (args: LeaseArgs) => {
        const count = (n: unknown) => Number.isInteger(n) && (n as number) >= 0 && (n as number) <= 1_000_000_000;
        if (!args || typeof args.leaseId !== 'string' || args.leaseId.length < 1 || args.leaseId.length > 64 || typeof args.holder !== 'string' || !count(args.used) || !count(args.need) || !count(args.want)) {
          throw ApplicationFailure.create({ type: INTENT_FAILURES.invalid, message: 'leaseCalls needs a lease id, a holder and non-negative integer counts', nonRetryable: true });
        }
      },
    },
  );

  setHandler(stateQuery, () => state);

  setHandler(
    reserveCallsUpdate,
    (n: number) => {
      handledThisRun++;
      state.totalUpdatesHandled++;
      let granted = 0;
      if (state.status === 'active') {
        granted = Math.min(n, room());
        state.actualCalls += granted;
      }
      return { granted, status: state.status, actualCalls: state.actualCalls, maxCalls: state.maxCalls };
    },
    {
      validator: (n: number) => {
        if (!Number.isInteger(n) || n < 1 || n > MAX_RESERVE_BATCH) {
          throw ApplicationFailure.create({ type: INTENT_FAILURES.invalid, message: `reserveCalls needs an integer 1..${MAX_RESERVE_BATCH}`, nonRetryable: true });
        }
      },
    },
  );

  setHandler(
    amendUpdate,
    async (args) => {
      // Validate and apply synchronously, so a second amend in the same activation sees version + 1.
      checkAmend(args);
      handledThisRun++;
      state.totalUpdatesHandled++;
      const previous = { expected: state.expectedCalls, max: state.maxCalls };
      const appliedAgainst = state.version;
      state.version++;
      if (args.newExpectedCalls != null) state.expectedCalls = args.newExpectedCalls;
      if (args.newMaxCalls != null) state.maxCalls = args.newMaxCalls;
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
      if (state.status !== 'active') throw notActive();
      handledThisRun++;
      state.totalUpdatesHandled++;
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
        if (state.status !== 'active') throw notActive();
      },
    },
  );

  const shouldContinueAsNew = () => handledThisRun >= canAfter || workflowInfo().continueAsNewSuggested;
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

    if (state.actualCalls !== persistedCalls && Date.now() - lastPersistAt >= COUNTER_PERSIST_INTERVAL_MS) {
      const calls = state.actualCalls;
      lastPersistAt = Date.now();
      await acts.persistIntentCounter({ projectId: state.projectId, workflowId: state.workflowId, actualCalls: calls });
      persistedCalls = calls;
    }
    if (shouldContinueAsNew()) {
      await condition(allHandlersFinished);
      if (state.status === 'active') {
        // Full state carries over (version, counter, ceiling, expiry, open leases); the next run
        // persists any counter change since the last write.
        await continueAsNew<typeof intentWorkflow>({ ...input, state: { ...state, run: state.run + 1 }, persistedActualCalls: persistedCalls });
      }
      continue;
    }
    // Sleep until: a status change, continue-as-new, a new lease, the counter changing (or its
    // throttle elapsing), the expiry, or the earliest lease settlement.
    const timers: number[] = [];
    if (state.expiresAtMs !== null) timers.push(state.expiresAtMs);
    for (const [id, l] of Object.entries(leases)) if (!settling.has(id)) timers.push(l.deadlineMs + LEASE_SETTLE_GRACE_MS);
    const dirty = state.actualCalls !== persistedCalls;
    if (dirty) timers.push(lastPersistAt + COUNTER_PERSIST_INTERVAL_MS);
    const epoch = leaseEpoch;
    const wake = () => state.status !== 'active' || shouldContinueAsNew() || leaseEpoch !== epoch || (!dirty && state.actualCalls !== persistedCalls);
    if (timers.length === 0) await condition(wake);
    else {
      const until = Math.min(...timers) - Date.now();
      if (until > 0) await condition(wake, until);
    }
  }
  // Let in-flight handlers (complete's activity, a late amend) finish before the run closes.
  await condition(allHandlersFinished);
  return state;

  /** The main loop as it was before call leases (kept verbatim for replay of runs started then). */
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
        await acts.persistIntentCounter({ projectId: state.projectId, workflowId: state.workflowId, actualCalls: calls });
        persistedCalls = calls;
      }
      if (shouldContinueAsNew()) {
        await condition(allHandlersFinished);
        if (state.status === 'active') {
          await continueAsNew<typeof intentWorkflow>({ ...input, state: { ...state, run: state.run + 1 }, persistedActualCalls: persistedCalls });
        }
      }
      if (state.status === 'active' && !shouldContinueAsNew()) {
        const until = state.expiresAtMs === null ? COUNTER_PERSIST_INTERVAL_MS : Math.min(COUNTER_PERSIST_INTERVAL_MS, Math.max(0, state.expiresAtMs - Date.now()));
        if (until > 0) await condition(() => state.status !== 'active' || shouldContinueAsNew(), until);
      }
    }
  }
}
