/**
 * Async jobs (POST /v1/jobs, GET /v1/jobs[/{id}], POST /v1/jobs/{id}/cancel): a validated
 * execution request becomes a `jobs` row (`job.submitted`) and one jobWorkflow (workflows/job.ts),
 * which queues it behind the project's processing limit and runs governance, dispatch and
 * recording as activities. Nothing is governed at submission (the spec: the firewall does not run
 * at submission). Koa-free: the route (src/api/routes/jobs.ts) adapts HTTP.
 */
import type { Client } from '@temporalio/client';
import { WorkflowIdConflictPolicy } from '@temporalio/common';
import type { Clock } from '../clock';
import type { Config } from '../config';
import { dispatchTimeoutMs } from '../pipeline/governed-call';
import type { Db } from '../db/pool';
import { claimIdempotencyKey, completeIdempotencyKey, releaseIdempotencyKey } from '../db/repositories/idempotency';
import { failUnstartedJob, findJob, insertJob, requestJobCancel, type JobRecord } from '../db/repositories/jobs';
import { ApiError, errors } from '../errors';
import type { ExecutionInput } from '../executions/types';
import { joinIntent, type IntentJoin } from '../executions/reservation-denial';
import type { IntentReservations } from '../intents/reservations';
import { newId } from '../ids';
import { canonicalSha256 } from '../payload-hash';
import type { Logger } from '../logger';
import { jobWorkflowId, type JobExecution, type JobInput } from '../../workflows/job-messages';
import { jobView, type JobView } from './view';

export interface JobServiceDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'providerTimeouts' | 'idempotencyRetentionHours' | 'jobs'>;
  temporal: { client: Client; taskQueue: string };
  /** A job joined to an intent (X-Svc-Workflow-Id) takes its call from the intent's ceiling. */
  intentReservations: Pick<IntentReservations, 'reserveCall' | 'giveBack'>;
}

/** What a job runs: the execution request, planned (routing resolved) by the route. */
export interface JobSubmission {
  request: ExecutionInput['request'];
  routing: ExecutionInput['routing'];
  metadata: Record<string, string>;
  /** The validated body: what an Idempotency-Key is bound to. */
  body: unknown;
  /** Re-dispatch an attempt interrupted by a worker death (the provider may see the call twice). */
  retryOnInterrupt?: boolean;
}

export interface JobReply {
  status: number;
  headers: Record<string, string>;
  body: JobView;
}

const IDEMPOTENCY_SCOPE = 'jobs';
const JOIN_POLL_MS = 25;
const JOIN_WAIT_MS = 10_000;
/** How long POST /v1/jobs/{id}/cancel waits for a processing job to close. */
const CANCEL_WAIT_MS = 5_000;

/** The workflow id is bound only when given, so keys used before jobs accepted one keep their hash. */
function payloadHash(body: unknown, workflowId: string | null): Promise<string> {
  return canonicalSha256({ route: 'jobs', body, ...(workflowId ? { workflow_id: workflowId } : {}) });
}

export async function submitJob(
  deps: JobServiceDeps,
  caller: { projectId: string; keyId: string; idempotencyKey: string | null; workflowId?: string | null },
  sub: JobSubmission,
): Promise<JobReply> {
  const { db, clock, config } = deps;
  const key = caller.idempotencyKey;
  const jobId = newId('job');

  if (key) {
    const requestHash = await payloadHash(sub.body, caller.workflowId ?? null);
    const deadline = Date.now() + JOIN_WAIT_MS;
    for (;;) {
      const claim = await claimIdempotencyKey(db, { projectId: caller.projectId, scope: IDEMPOTENCY_SCOPE, key, requestHash, resourceId: jobId, retentionHours: config.idempotencyRetentionHours });
      if (claim.outcome === 'claimed') break;
      if (claim.outcome === 'conflict') throw errors.idempotencyConflict(key);
      if (claim.outcome === 'completed' && claim.resourceId) {
        const existing = await findJob(db, caller.projectId, claim.resourceId);
        if (existing) return { status: 202, headers: { 'idempotent-replayed': 'true', location: `/v1/jobs/${existing.id}` }, body: jobView(existing) };
      }
      if (Date.now() > deadline) {
        throw errors.conflict('idempotency_in_flight', 'A request with this Idempotency-Key has not finished; retry later', { idempotency_key: key, job_id: claim.outcome === 'in_flight' ? claim.resourceId : null });
      }
      await new Promise((r) => setTimeout(r, JOIN_POLL_MS));
    }
  }

  // Joined to an intent: the call is taken from its ceiling now (the API process holds the intent
  // reservations); a refusal is carried to governance, which denies the job's call with the
  // intent's reason code as executions do (a permit and the job failed, no dispatch).
  const workflowId = caller.workflowId ?? null;
  let intent: IntentJoin = {};
  if (workflowId) {
    try {
      intent = await joinIntent(deps.intentReservations, caller.projectId, workflowId);
    } catch (err) {
      if (key) await releaseIdempotencyKey(db, { projectId: caller.projectId, scope: IDEMPOTENCY_SCOPE, key }).catch(() => undefined);
      throw err;
    }
  }

  const now = clock.now();
  const executionId = newId('exec_req');
  const permitId = newId('permit');
  let job: JobRecord;
  try {
    job = await insertJob(db, {
      id: jobId,
      projectId: caller.projectId,
      requestId: executionId,
      permitId,
      operation: sub.request.operation,
      provider: sub.routing.primary.provider,
      model: sub.routing.primary.model,
      metadata: sub.metadata,
      idempotencyKey: key,
      createdAt: now,
      retryOnInterrupt: sub.retryOnInterrupt === true,
      request: sub.request,
    });
  } catch (err) {
    // No job: its intent call was not made.
    if (intent.lease && workflowId) deps.intentReservations.giveBack(caller.projectId, workflowId, intent.lease);
    if (key) await releaseIdempotencyKey(db, { projectId: caller.projectId, scope: IDEMPOTENCY_SCOPE, key }).catch(() => undefined);
    throw err;
  }

  // No request here: the workflow's input holds ids and settings only; the activities load the
  // request stored with the job (the claim check).
  const execution: JobExecution = {
    executionId,
    permitId,
    projectId: caller.projectId,
    route: 'executions',
    mode: 'sync',
    createdAt: now.toISOString(),
    routing: sub.routing,
    workflowIntentId: workflowId,
    ...(intent.refusal ? { reservationDenied: intent.refusal } : {}),
    ...(intent.lease ? { intentLease: intent.lease } : {}),
    idempotencyKey: null,
    keyId: caller.keyId,
    jobId,
    dispatchTimeoutMs: dispatchTimeoutMs(config, sub.routing),
    heartbeatTimeoutMs: config.jobs.heartbeatTimeoutMs,
  };
  const input: JobInput = {
    jobId,
    projectId: caller.projectId,
    keyId: caller.keyId,
    execution,
    limits: {
      maxProcessing: config.jobs.maxProcessingPerProject,
      maxAttempts: config.jobs.maxAttempts,
      retryBaseMs: config.jobs.retryBaseMs,
      retryMaxMs: config.jobs.retryMaxMs,
      retryAfterMaxMs: config.jobs.retryAfterMaxMs,
      ...(sub.retryOnInterrupt ? { retryOnInterrupt: true } : {}),
    },
  };
  try {
    await deps.temporal.client.workflow.start('jobWorkflow', {
      workflowId: jobWorkflowId(jobId),
      taskQueue: deps.temporal.taskQueue,
      args: [input],
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    });
  } catch (err) {
    deps.logger.error({ err, jobId }, 'job workflow could not be started');
    await failUnstartedJob(db, jobId, clock.now()).catch(() => undefined);
    if (key) await releaseIdempotencyKey(db, { projectId: caller.projectId, scope: IDEMPOTENCY_SCOPE, key }).catch(() => undefined);
    throw new ApiError(503, 'jobs_unavailable', 'The job could not be queued; retry later', { details: { job_id: jobId } });
  }
  if (key) await completeIdempotencyKey(db, { projectId: caller.projectId, scope: IDEMPOTENCY_SCOPE, key, resourceId: jobId });
  return { status: 202, headers: { location: `/v1/jobs/${jobId}` }, body: jobView(job) };
}

export async function readJob(deps: Pick<JobServiceDeps, 'db'>, projectId: string, jobId: string): Promise<JobView> {
  const job = await findJob(deps.db, projectId, jobId);
  if (!job) throw errors.notFound('Job', jobId);
  return jobView(job);
}

/**
 * Cancels a queued job at once, or asks a processing one's workflow to stop (the dispatch is
 * aborted and recorded) and waits briefly for it to close. A finished job cannot be cancelled
 * (409 job_not_cancellable); cancelling a cancelled job answers it again.
 */
export async function cancelJob(deps: JobServiceDeps, projectId: string, jobId: string): Promise<{ status: number; body: JobView }> {
  const job = await requestJobCancel(deps.db, projectId, jobId, deps.clock.now());
  if (!job) throw errors.notFound('Job', jobId);
  if (job.status === 'completed' || job.status === 'failed') {
    throw errors.conflict('job_not_cancellable', `Job ${jobId} is already ${job.status}`, { job_id: jobId, status: job.status });
  }
  try {
    await deps.temporal.client.workflow.getHandle(jobWorkflowId(jobId)).cancel();
  } catch (err) {
    // Already closed (a queued job cancelled twice, a race with completion): the row says what happened.
    deps.logger.debug({ err, jobId }, 'job workflow cancel request not delivered');
  }
  let current: JobRecord | null = job;
  const deadline = Date.now() + CANCEL_WAIT_MS;
  while (current && current.status === 'processing' && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    current = await findJob(deps.db, projectId, jobId);
  }
  if (!current) throw errors.notFound('Job', jobId);
  return { status: current.status === 'processing' ? 202 : 200, body: jobView(current) };
}
