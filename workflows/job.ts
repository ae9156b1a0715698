import {
  ActivityCancellationType,
  ActivityFailure,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  patched,
  setHandler,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { JobActivities, PriorAttempts } from '../activities/jobs';
import type { ExecutionEnvelope } from '../src/executions/envelope';
import type { GovernOutcome, RecordInput } from '../src/executions/types';
import { jobWorkflowId, retryDelayMs, slotFreedSignal, type JobInput, type JobOutcome } from './job-messages';
import { SA } from './search-attributes';

/** Short database work: local activities, retried on failure (each is idempotent). */
const { jobQueued, jobAcquireSlot, jobGovern, jobRecord, jobFinish } = proxyLocalActivities<JobActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '100 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 20 },
});

/**
 * An attempt that does not report back is never followed by another dispatch (at most one provider
 * call per job); workflows started before this marker retried it (at most one call per attempt).
 */
export const LOST_ATTEMPT_AT_MOST_ONCE_PATCH = 'job-lost-attempt-at-most-once';

/**
 * Slot polling when no signal arrives (a lost wake-up, a wakee cancelled meanwhile): 5 s doubling
 * to 60 s. A finishing job signals the oldest queued one, so polling is only the backstop.
 */
function slotPollMs(round: number): number {
  return Math.min(60_000, 5000 * 2 ** Math.min(round, 4));
}

/**
 * One async job (POST /v1/jobs): queued → a per-project processing slot → governance at
 * processing time (the prompt firewall runs here, not at submission) → dispatch, retried on
 * retryable upstream failures with backoff honouring Retry-After → recording once → the job
 * closed with its execution envelope, and the next queued job of the project woken.
 *
 * The dispatch is a normal activity with a heartbeat and no automatic retry: a provider call is
 * not idempotent. Retryable upstream failures (429, 5xx) get further attempts. An attempt that does
 * not report back (its worker died, or Temporal lost track of it: heartbeat timeout) may have
 * reached the provider, so it is not repeated: the job takes that attempt's own record if one is
 * written before its dispatch deadline, else closes `dispatch_interrupted`, unless the job opted in
 * (`retry_on_interrupt`): then it is dispatched again, and the provider may see the call twice.
 * A denial is final. Cancellation (POST
 * /v1/jobs/{id}/cancel) aborts a running dispatch and records what happened, once.
 */
export async function jobWorkflow(input: JobInput): Promise<JobOutcome> {
  const { jobId, execution, limits } = input;
  let woken = false;
  setHandler(slotFreedSignal, () => {
    woken = true;
  });

  let gov: GovernOutcome | null = null;
  let attempts = 0;
  let prior: PriorAttempts = { attempts: [], events: [] };
  let envelope: ExecutionEnvelope | null = null;

  const { jobDispatch } = proxyActivities<JobActivities>({
    startToCloseTimeout: execution.dispatchTimeoutMs,
    heartbeatTimeout: execution.heartbeatTimeoutMs,
    retry: { maximumAttempts: 1 },
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });
  const { jobAwaitLostAttempt } = proxyActivities<JobActivities>({
    startToCloseTimeout: execution.dispatchTimeoutMs + 30_000,
    heartbeatTimeout: '10 seconds',
    retry: { initialInterval: '1 second', maximumAttempts: 20 },
  });

  try {
    await jobQueued(jobId);
    for (let round = 0; ; round++) {
      // Cleared before asking: a wake-up that arrives while the slot is being checked is kept.
      woken = false;
      const slot = await jobAcquireSlot(jobId, limits.maxProcessing);
      if (slot === 'acquired') break;
      if (slot === 'gone') return { status: 'cancelled', result: null, attempts: 0 };
      await condition(() => woken, slotPollMs(round));
    }

    gov = await jobGovern(execution, jobId, input.keyId ?? null);
    if (gov.decision !== 'allow') {
      envelope = await jobRecord(execution, { kind: 'governed_out', gov });
    } else {
      for (let attempt = 1; attempt <= limits.maxAttempts; attempt++) {
        attempts = attempt;
        const final = attempt === limits.maxAttempts;
        let retryAfterSeconds: number | null = null;
        const attemptStartedAt = Date.now();
        try {
          const r = await jobDispatch(execution, gov, { jobId, attempt, final, prior });
          if (r.recorded) {
            envelope = r.recorded;
            break;
          }
          prior = r.retry!.prior;
          retryAfterSeconds = r.retry!.retryAfterSeconds;
        } catch (err) {
          if (isCancellation(err)) throw err;
          // The attempt did not report back (worker died, timed out): its outcome is unknown.
          const cause = err instanceof ActivityFailure ? err.cause : err;
          // Opted in: dispatch again, with the same permit and reservation (the next attempt
          // returns the lost one's record instead if it wrote one). The last attempt falls through
          // to the default, so a request that kills its worker every time still ends.
          if (limits.retryOnInterrupt && !final) {
            await sleep(retryDelayMs(limits, attempt + 1, null));
            continue;
          }
          if (patched(LOST_ATTEMPT_AT_MOST_ONCE_PATCH)) {
            const message = cause instanceof Error ? cause.message : String(cause);
            envelope = await jobAwaitLostAttempt(execution, gov, { message, untilMs: attemptStartedAt + execution.dispatchTimeoutMs }, prior);
            break;
          }
          if (final) {
            envelope = await jobRecord(execution, { kind: 'interrupted', gov, message: cause instanceof Error ? cause.message : String(cause) }, prior);
            break;
          }
        }
        await sleep(retryDelayMs(limits, attempt + 1, retryAfterSeconds));
      }
    }
    const status = envelope!.status === 'completed' ? 'completed' : 'failed';
    await close(status);
    return { status, result: envelope, attempts };
  } catch (err) {
    if (!isCancellation(err)) {
      // An engine failure (a local activity out of retries): the job must not hold its slot
      // forever. The permit's reservation, if any, expires with the permit.
      await close('failed', 'job_engine_error');
      return { status: 'failed', result: envelope, attempts };
    }
    // Cancelled (queued, waiting for a slot, between attempts, or mid-dispatch): record what the
    // governed call came to, once, and close the job. Not cancellable itself.
    await CancellationScope.nonCancellable(async () => {
      if (gov && !envelope) {
        const rec: RecordInput = gov.decision !== 'allow' ? { kind: 'governed_out', gov } : { kind: 'interrupted', gov, message: 'job cancelled' };
        envelope = await jobRecord(execution, rec, prior);
      }
      await close('cancelled');
    });
    return { status: 'cancelled', result: envelope, attempts };
  }

  async function close(status: JobOutcome['status'], errorCode?: string): Promise<void> {
    const next = await jobFinish(jobId, { status, result: envelope, attempts, errorCode: errorCode ?? envelope?.error?.code ?? (status === 'cancelled' ? 'job_cancelled' : null) });
    upsertSearchAttributes([
      { key: SA.status, value: status },
      ...(envelope?.routing.selected_provider ? [{ key: SA.provider, value: envelope.routing.selected_provider }] : []),
      ...(envelope?.routing.selected_model ? [{ key: SA.model, value: envelope.routing.selected_model }] : []),
    ]);
    if (next && next !== jobId) {
      try {
        await getExternalWorkflowHandle(jobWorkflowId(next)).signal(slotFreedSignal);
      } catch {
        // The wakee already finished or was cancelled: it polls anyway, nothing is lost.
      }
    }
  }
}
