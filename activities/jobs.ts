/**
 * Activities of the jobWorkflow (workflows/job.ts), the durable engine of an async job: the
 * governed-call steps of activities/governed-call.ts wrapped for Temporal, plus the job's status
 * moves. Governance and recording are local activities (idempotent per permit and per execution
 * id); the dispatch is a normal activity with a heartbeat and no automatic retry (a provider call is
 * not idempotent: the workflow decides whether another attempt is made). Sync and stream calls do
 * not come here: the API runs the same steps in process.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { appendEvents, requestHasEvent } from '../src/db/repositories/events';
import type { NewEvent } from '../src/events/types';
import { findCallRecordById } from '../src/db/repositories/call-records';
import { acquireJobSlot, findJobDispatch, findJobRequest, finishJob, markJobDispatch, markJobQueued, setJobAttempts, type SlotOutcome } from '../src/db/repositories/jobs';
import { findPermit } from '../src/db/repositories/permits';
import { permitEventRows } from '../src/executions/lifecycle-events';
import type { DispatchStart } from '../src/executions/lifecycle';
import type { ExecutionEnvelope } from '../src/executions/envelope';
import { executionEvents, normalizedRequest } from '../src/executions/record';
import type { AttemptRecord, DispatchOutcome, ExecutionInput, GovernOutcome, RecordInput } from '../src/executions/types';
import { triggersFallback } from '../src/pipeline/fallback';
import { requestInspectable } from '../src/providers/shared/usage';
import { executionTools, toolDefinitionTexts } from '../src/executions/request-tools';
import type { ActivityDeps } from './deps';
import { createGovernedCallActivities } from './governed-call';
import { withOutputCeiling } from '../src/executions/output-ceiling';
import type { JobExecution } from '../workflows/job-messages';
import { PERMIT_LEASE_KEY } from '../workflows/intent-messages';

/** Governance route label of jobs (policy rules can match `route: "jobs"`). */
export const JOB_GOVERNANCE_ROUTE = 'jobs';

/**
 * What earlier attempts of a job leave for the one that records: their provider calls, and the
 * events of attempts that stored theirs as rows (started before the job's call was recorded with a
 * lifecycle; now always empty: the record's lifecycle holds them).
 */
export interface PriorAttempts {
  attempts: AttemptRecord[];
  events: NewEvent[];
}

export interface JobDispatchSpec {
  jobId: string;
  /** 1-based dispatch attempt. */
  attempt: number;
  /** No further attempt may follow: record whatever this one ends with. */
  final: boolean;
  prior: PriorAttempts;
}

/**
 * What a dispatch attempt returns: `recorded` when it recorded the execution (success, a final
 * failure, or the last attempt); otherwise a retryable failure, with what the next attempt carries.
 */
export interface JobDispatchResult {
  recorded?: ExecutionEnvelope;
  retry?: { failureKind: string; status: number | null; retryAfterSeconds: number | null; prior: PriorAttempts };
}

/** Events that crossed Temporal (JSON) carry their timestamps as strings: Dates again. */
function revived(events: NewEvent[]): NewEvent[] {
  return events.map((e) => (e.timestamp === undefined ? e : { ...e, timestamp: new Date(e.timestamp) }));
}

export function createJobActivities(deps: ActivityDeps) {
  const { db, logger, clock } = deps;
  const calls = createGovernedCallActivities(deps);

  /**
   * The full execution input: the workflow carries the job's execution without its request (the
   * claim check), which is read here from the row stored at submission. Workflows started before
   * the claim check carry it inline.
   */
  async function withRequest(exec: JobExecution): Promise<ExecutionInput> {
    if (exec.request) return exec as ExecutionInput;
    const request = await findJobRequest<ExecutionInput['request']>(db, exec.jobId);
    if (!request) throw ApplicationFailure.nonRetryable(`The request of job ${exec.jobId} is not stored`, 'job_request_missing');
    return { ...exec, request };
  }

  /** Whether governance stored the allow's permit.allowed as a row (it ran before a job's call was recorded with a lifecycle). */
  function decisionStored(input: ExecutionInput): Promise<boolean> {
    return requestHasEvent(db, input.projectId, input.executionId, 'permit.allowed');
  }

  /**
   * Records the job's call, once. When a dispatch attempt started (the job's dispatch starts, kept
   * before each attempt calls the provider), the record carries the lifecycle and the call's events
   * are derived from it and the permit, as for a pipeline call. Otherwise (a denial, an allow
   * cancelled before dispatch) its events are stored rows, with the allow's permit events governance
   * left to the record. `legacyEvents`: an attempt that stored its events as rows keeps doing so.
   */
  async function recordCall(input: ExecutionInput, rec: RecordInput, priorAttempts: AttemptRecord[], legacyEvents: NewEvent[]): Promise<ExecutionEnvelope> {
    if (legacyEvents.length > 0) return calls.record(input, rec, { fallbackEvents: legacyEvents });
    const dispatch = await findJobDispatch(db, input.jobId!);
    if (dispatch && rec.kind !== 'governed_out') {
      const attempts = Object.entries(dispatch.attempts).map(([n, [at, priorTries]]) => ({ attempt: Number(n), at, priorTries }));
      return calls.record(input, { ...rec, gov: { ...rec.gov, dispatch: dispatch.start } }, { job: { priorAttempts, attempts } });
    }
    if (rec.gov.decision !== 'allow' || (await decisionStored(input))) return calls.record(input, rec);
    const permit = await findPermit(db, input.projectId, input.permitId);
    return calls.record(input, rec, permit ? { fallbackEvents: permitEventRows(permit) } : {});
  }

  return {
    /** `job.queued`: the workflow took the job. */
    async jobQueued(jobId: string): Promise<void> {
      await markJobQueued(db, jobId, clock.now());
    },

    /** One of the project's processing slots (`job.processing`), or `full` / `gone` (cancelled). */
    async jobAcquireSlot(jobId: string, limit: number): Promise<SlotOutcome> {
      return acquireJobSlot(db, jobId, limit, () => clock.now());
    },

    /** Policy, budget, rate and firewall checks at processing time; writes the permit (idempotent per permit id). */
    async jobGovern(exec: JobExecution, jobId: string, keyId: string | null = null): Promise<GovernOutcome> {
      const input = await withRequest(exec);
      const req = normalizedRequest(input, input.routing.primary);
      const tools = executionTools(req);
      const { estimatedInputTokens: _e, ...gov } = await calls.govern({
        input,
        request: req,
        route: JOB_GOVERNANCE_ROUTE,
        // As on /v1/executions: the messages, then the tool definitions of the targets' provider options.
        inspectableText: [...requestInspectable(req), ...toolDefinitionTexts(input.request)],
        ...(tools.length ? { tools } : {}),
        // The call is recorded with a lifecycle (recordCall): permit.allowed and
        // permit.expiry_scheduled are derived from the permit and the record.
        derivedPermitEvents: true,
        permitMetadata: {
          execution_id: input.executionId, mode: input.mode, job_id: jobId, ...(keyId ? { key_id: keyId } : {}),
          ...(exec.intentLease ? { [PERMIT_LEASE_KEY]: exec.intentLease } : {}),
        },
      });
      return gov;
    },

    /**
     * One dispatch attempt (primary, then the explicit fallback chain). Records the execution
     * itself unless the failure is retryable and another attempt may follow. Never dispatches for
     * an execution already recorded (an attempt that recorded but died before reporting back).
     */
    async jobDispatch(exec: JobExecution, gov: GovernOutcome, spec: JobDispatchSpec): Promise<JobDispatchResult> {
      const existing = await findCallRecordById(db, exec.executionId);
      if (existing) return { recorded: existing.envelope };
      const input = await withRequest(exec);
      const ev = executionEvents(input);
      const ctx = Context.current();
      const heartbeat = setInterval(() => ctx.heartbeat(), Math.max(200, Math.floor(input.heartbeatTimeoutMs / 3)));
      heartbeat.unref?.();
      // Only a cancellation the workflow asked for (POST /v1/jobs/{id}/cancel) aborts the provider
      // call. When the server merely stopped waiting for this attempt (heartbeat timeout while it
      // was down or the worker was starved, workflow gone, worker shutting down), the call runs to
      // its end and its real outcome is recorded: the next attempt finds that record instead of a
      // failure this attempt made up by aborting a call that was about to succeed.
      const jobCancel = new AbortController();
      const onCancel = () => {
        const reason: unknown = ctx.cancellationSignal.reason;
        const requested = ctx.cancellationDetails?.cancelRequested || (reason instanceof Error && reason.message === 'CANCELLED');
        if (requested) jobCancel.abort(reason);
      };
      ctx.cancellationSignal.addEventListener('abort', onCancel, { once: true });
      try {
        const req = normalizedRequest(input, input.routing.primary);
        // A job whose governance or earlier attempts stored their events as rows (they ran before
        // a job's call was recorded with a lifecycle) keeps storing them: the record would derive
        // them a second time.
        const legacy = spec.prior.events.length > 0 || (await decisionStored(input));
        if (legacy) {
          await setJobAttempts(db, spec.jobId, spec.attempt);
          const t = input.routing.primary;
          const now = clock.now();
          await appendEvents(
            db,
            spec.attempt === 1
              ? [
                  ev('routing.selected_model', now, t, { reason_code: input.routing.reason_code, requested_provider: input.routing.requested_provider, requested_model: input.routing.requested_model }),
                  ev('execution.started', now, t, { operation: req.operation, mode: input.mode, job_id: spec.jobId }),
                  ev('provider.request_sent', now, t, { attempt: 1, stream: false }),
                ]
              : [ev('provider.request_sent', now, t, { attempt: spec.prior.attempts.length + 1, stream: false, job_attempt: spec.attempt })],
          );
        } else {
          // Kept before the provider is called: whatever records the call knows it was sent, and
          // its dispatch events are derived from the record (recordCall).
          const t = input.routing.primary;
          const start: DispatchStart = {
            at: clock.now().toISOString(),
            primary: { provider: t.provider, model: t.model },
            routing: { reason_code: input.routing.reason_code, requested_provider: input.routing.requested_provider, requested_model: input.routing.requested_model },
            started: { operation: req.operation, mode: input.mode, job_id: spec.jobId },
            stream: false,
          };
          await markJobDispatch(db, spec.jobId, { attempt: spec.attempt, start, priorTries: spec.prior.attempts.length });
        }
        // Hard caps: the output ceiling governance set or lowered goes to every try.
        const { outcome, fallbackEvents } = await calls.dispatch(withOutputCeiling(input, gov), { signal: jobCancel.signal });
        const merged: DispatchOutcome = { ...outcome, attempts: [...spec.prior.attempts, ...outcome.attempts] };
        const events = legacy ? [...revived(spec.prior.events), ...fallbackEvents] : [];
        const retryable = !outcome.ok && outcome.kind === 'provider' && outcome.failure.kind !== 'aborted' && triggersFallback(outcome.failure) && !jobCancel.signal.aborted;
        if (retryable && !spec.final && !outcome.ok) {
          const last = outcome.attempts[outcome.attempts.length - 1];
          if (legacy) events.push(
            ev('provider.response_received', last?.receivedAt ?? clock.now(), outcome.target, {
              ok: false, status: outcome.failure.status, failure_kind: outcome.failure.kind, attempt: merged.attempts.length, job_attempt: spec.attempt, retried: true,
            }),
          );
          return {
            retry: {
              failureKind: outcome.failure.kind,
              status: outcome.failure.status,
              retryAfterSeconds: outcome.failure.retry_after_seconds ?? null,
              prior: { attempts: merged.attempts, events },
            },
          };
        }
        return { recorded: await recordCall(input, { kind: 'dispatched', gov, outcome: merged }, spec.prior.attempts, events) };
      } finally {
        clearInterval(heartbeat);
        ctx.cancellationSignal.removeEventListener('abort', onCancel);
      }
    },

    /**
     * An attempt that did not report back may have reached the provider (its worker died mid-call,
     * or it still runs while Temporal lost track of it). It is never repeated: this waits until the
     * attempt's dispatch deadline for the attempt's own record, else records the call interrupted
     * (`dispatch_interrupted`, estimated usage settled). Idempotent: safe to retry.
     */
    async jobAwaitLostAttempt(exec: JobExecution, gov: GovernOutcome, spec: { message: string; untilMs: number }, prior?: PriorAttempts): Promise<ExecutionEnvelope> {
      const ctx = Context.current();
      for (;;) {
        const existing = await findCallRecordById(db, exec.executionId);
        if (existing) return existing.envelope;
        const left = spec.untilMs - clock.now().getTime();
        if (left <= 0) break;
        ctx.heartbeat();
        await ctx.sleep(Math.min(500, left));
      }
      const rec: RecordInput = { kind: 'interrupted', gov, message: spec.message };
      return recordCall(await withRequest(exec), rec, prior?.attempts ?? [], revived(prior?.events ?? []));
    },

    /** Envelope, spend, completion events, once (denials, interrupted attempts). Safe to retry. */
    async jobRecord(exec: JobExecution, rec: RecordInput, prior?: PriorAttempts): Promise<ExecutionEnvelope> {
      const existing = await findCallRecordById(db, exec.executionId);
      if (existing) return existing.envelope;
      return recordCall(await withRequest(exec), rec, prior?.attempts ?? [], revived(prior?.events ?? []));
    },

    /** Closes the job (`job.completed` / `job.failed` / `job.cancelled`); returns the queued job the freed slot wakes. */
    async jobFinish(
      jobId: string,
      f: { status: 'completed' | 'failed' | 'cancelled'; result: ExecutionEnvelope | null; attempts: number; errorCode: string | null },
    ): Promise<string | null> {
      const r = await finishJob(db, jobId, { ...f, at: clock.now() });
      if (!r.finished) logger.debug({ jobId }, 'job already closed');
      return r.nextQueuedJobId;
    },
  };
}

export type JobActivities = ReturnType<typeof createJobActivities>;
