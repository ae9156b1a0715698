import { ActivityFailure, proxyActivities, proxyLocalActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { ExecutionActivities } from '../activities/executions';
import type { ExecutionEnvelope } from '../src/executions/envelope';
import type { DispatchResult, ExecutionInput, RecordInput } from '../src/executions/types';
import { SA } from './search-attributes';

/** Governance and recording are short database work: local activities, retried on failure (both idempotent). */
const { executionGovern, executionRecord } = proxyLocalActivities<ExecutionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '100 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 20 },
});

/**
 * One governed execution (POST /v1/executions, POST /v1/execute): governance → permit →
 * dispatch (with the explicit fallback chain) → usage, spend and events → the envelope. The
 * dispatch activity records a call it made itself (one activity instead of an activity and a
 * local activity); the recording local activity covers denials, interrupted dispatches and a
 * recording the activity could not do.
 *
 * The dispatch is a normal activity with a heartbeat and no automatic retry (a provider call is
 * not idempotent). When it does not report back (its worker died; heartbeat or start-to-close
 * timeout), the workflow does not dispatch again: it records the execution as failed
 * (`dispatch_interrupted`) with estimated input usage, once.
 */
export async function executionWorkflow(input: ExecutionInput): Promise<ExecutionEnvelope> {
  const gov = await executionGovern(input);
  let rec: RecordInput;
  if (gov.decision !== 'allow') {
    rec = { kind: 'governed_out', gov };
  } else {
    const { executionDispatch } = proxyActivities<ExecutionActivities>({
      startToCloseTimeout: input.dispatchTimeoutMs,
      heartbeatTimeout: input.heartbeatTimeoutMs,
      retry: { maximumAttempts: 1 },
    });
    try {
      // Handed `gov`, the dispatch activity records the execution too (`recorded`).
      const { recorded, ...outcome }: DispatchResult = await executionDispatch(input, gov);
      if (recorded) return finish(recorded);
      rec = { kind: 'dispatched', gov, outcome };
    } catch (err) {
      const cause = err instanceof ActivityFailure ? err.cause : err;
      rec = { kind: 'interrupted', gov, message: cause instanceof Error ? cause.message : String(cause) };
    }
  }
  return finish(await executionRecord(input, rec));
}

function finish(envelope: ExecutionEnvelope): ExecutionEnvelope {
  upsertSearchAttributes([
    { key: SA.status, value: envelope.status },
    ...(envelope.routing.selected_provider ? [{ key: SA.provider, value: envelope.routing.selected_provider }] : []),
    ...(envelope.routing.selected_model ? [{ key: SA.model, value: envelope.routing.selected_model }] : []),
  ]);
  return envelope;
}
