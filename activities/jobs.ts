/**
 * Activities of the executionWorkflow, the durable engine of a governed call (async jobs): the
 * governed-call steps of activities/governed-call.ts, wrapped for Temporal. Governance and
 * recording are local activities (idempotent per permit and per execution id); the dispatch is a
 * normal activity with a heartbeat and no automatic retry (a provider call is not idempotent).
 * Sync and stream calls do not come here: the API runs the same steps in process.
 */
import { Context } from '@temporalio/activity';
import { appendEvents } from '../src/db/repositories/events';
import { findExecutionById } from '../src/db/repositories/executions';
import type { ExecutionEnvelope } from '../src/executions/envelope';
import { normalizedRequest } from '../src/executions/record';
import type { DispatchResult, ExecutionInput, GovernOutcome, RecordInput } from '../src/executions/types';
import { dispatchStartEvents } from '../src/pipeline/fallback';
import { requestTexts } from '../src/providers/shared/usage';
import type { ActivityDeps } from './deps';
import { createGovernedCallActivities } from './governed-call';

export function createExecutionActivities(deps: ActivityDeps) {
  const { db, logger } = deps;
  const calls = createGovernedCallActivities(deps);

  return {
    /** Policy, budget, rate and firewall checks; writes the permit (idempotent per permit id). */
    async executionGovern(input: ExecutionInput): Promise<GovernOutcome> {
      const req = normalizedRequest(input, input.routing.primary);
      const { estimatedInputTokens: _e, ...gov } = await calls.govern({
        input,
        request: req,
        route: input.route,
        inspectableText: requestTexts(req),
        permitMetadata: { execution_id: input.executionId, mode: input.mode },
      });
      return gov;
    },

    /** The provider call and, when handed the governance outcome, its recording. */
    async executionDispatch(input: ExecutionInput, gov?: GovernOutcome): Promise<DispatchResult> {
      const ctx = Context.current();
      const heartbeat = setInterval(() => ctx.heartbeat(), Math.max(200, Math.floor(input.heartbeatTimeoutMs / 3)));
      heartbeat.unref?.();
      try {
        // The in-process pipeline writes these with the permit; here they precede the call.
        const req = normalizedRequest(input, input.routing.primary);
        await appendEvents(db, dispatchStartEvents(input, deps.clock.now(), { operation: req.operation, mode: input.mode, stream: input.mode === 'stream' }));
        const { outcome, fallbackEvents } = await calls.dispatch(input, { signal: ctx.cancellationSignal });
        if (!gov) return outcome;
        try {
          return { ...outcome, recorded: await calls.record(input, { kind: 'dispatched', gov, outcome }, { fallbackEvents }) };
        } catch (err) {
          // Left to the workflow's recording local activity, which retries: a provider result is
          // never lost to a database hiccup.
          logger.warn({ err, executionId: input.executionId }, 'recording in the dispatch activity failed; the workflow records');
          return outcome;
        }
      } finally {
        clearInterval(heartbeat);
      }
    },

    /** Envelope, spend, completion events, once. Safe to retry. */
    async executionRecord(input: ExecutionInput, rec: RecordInput): Promise<ExecutionEnvelope> {
      if (Context.current().info.attempt > 1) {
        const existing = await findExecutionById(db, input.executionId);
        if (existing) return existing.envelope;
      }
      return calls.record(input, rec);
    },
  };
}

export type ExecutionActivities = ReturnType<typeof createExecutionActivities>;
