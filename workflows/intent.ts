import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
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
  amendUpdate,
  completeUpdate,
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

/**
 * One run per declared workflow intent (Temporal id `intent:<project_id>:<workflow_id>`). Owns the
 * version, the call counter, the ceiling, the expiry timer and amend/complete. Every state change is
 * mirrored to PostgreSQL by activities; the counter is written at most once a second and always
 * before continue-as-new, completion and expiry.
 */
export async function intentWorkflow(input: IntentWorkflowInput): Promise<IntentState> {
  const state: IntentState = { ...input.state };
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

  setHandler(stateQuery, () => state);

  setHandler(
    reserveCallsUpdate,
    (n: number) => {
      handledThisRun++;
      state.totalUpdatesHandled++;
      let granted = 0;
      if (state.status === 'active') {
        const room = state.maxCalls === null ? n : Math.max(0, state.maxCalls - state.actualCalls);
        granted = Math.min(n, room);
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
      const recorded = await acts.recordIntentAmendment({
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
      });
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
      // From here on no call is granted.
      state.status = 'completed';
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
        // Full state carries over (version, counter, ceiling, expiry); the next run persists any
        // counter change since the last write.
        await continueAsNew<typeof intentWorkflow>({ ...input, state: { ...state, run: state.run + 1 }, persistedActualCalls: persistedCalls });
      }
    }
    // Throttle counter writes; wake early for a status change, continue-as-new or the expiry.
    if (state.status === 'active' && !shouldContinueAsNew()) {
      const until = state.expiresAtMs === null ? COUNTER_PERSIST_INTERVAL_MS : Math.min(COUNTER_PERSIST_INTERVAL_MS, Math.max(0, state.expiresAtMs - Date.now()));
      if (until > 0) await condition(() => state.status !== 'active' || shouldContinueAsNew(), until);
    }
  }
  // Let in-flight handlers (complete's activity, a late amend) finish before the run closes.
  await condition(allHandlersFinished);
  return state;
}
