/**
 * Async jobs (table `jobs`, migration 0110). Every status move is a conditional UPDATE in the
 * transaction that appends its `job.*` event, so an activity retried after a crash moves the job
 * (and writes the event) once.
 */
import type { Db, Queryable } from '../pool';
import { withTransaction } from '../pool';
import { appendEvents } from './events';
import type { NewEvent } from '../../events/types';
import type { ExecutionEnvelope } from '../../executions/envelope';
import type { DispatchStart } from '../../executions/lifecycle';

export const JOB_STATUSES = ['queued', 'processing', 'completed', 'failed', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export interface JobRecord {
  id: string;
  project_id: string;
  status: JobStatus;
  request_id: string;
  permit_id: string;
  operation: string;
  provider: string | null;
  model: string | null;
  metadata: Record<string, string>;
  idempotency_key: string | null;
  attempts: number;
  result: ExecutionEnvelope | null;
  error_code: string | null;
  cancel_requested_at: Date | null;
  /** Re-dispatch after a worker death (the caller's opt-in). */
  retry_on_interrupt: boolean;
  created_at: Date;
  queued_at: Date | null;
  started_at: Date | null;
  completed_at: Date | null;
}

/** Lock class of a project's job slots (pg_advisory_xact_lock(class, hashtext(project))). */
export const JOB_SLOT_LOCK_CLASS = 7_401;

export const JOB_EVENT_SOURCE = 'jobs';

export function jobEvent(job: Pick<JobRecord, 'id' | 'project_id' | 'request_id' | 'provider' | 'model'> & { permit_id?: string | null }, eventType: string, metadata: Record<string, unknown> = {}, at?: Date): NewEvent {
  return {
    projectId: job.project_id,
    eventType,
    source: JOB_EVENT_SOURCE,
    phase: 'job',
    provider: job.provider,
    model: job.model,
    permitId: job.permit_id ?? null,
    requestId: job.request_id,
    jobId: job.id,
    metadata,
    ...(at ? { timestamp: at } : {}),
  };
}

export interface NewJob {
  id: string;
  projectId: string;
  requestId: string;
  permitId: string;
  operation: string;
  provider: string | null;
  model: string | null;
  metadata: Record<string, string>;
  idempotencyKey: string | null;
  createdAt: Date;
  retryOnInterrupt?: boolean;
  /** The execution request the job runs (table job_requests): its workflow carries only the job id. */
  request: unknown;
}

/** Inserts a queued job, its request and its `job.submitted` event in one transaction. */
export async function insertJob(db: Db, j: NewJob): Promise<JobRecord> {
  return withTransaction(db, async (c) => {
    const { rows } = await c.query<JobRecord>(
      `INSERT INTO jobs (id, project_id, status, request_id, permit_id, operation, provider, model, metadata, idempotency_key, created_at, retry_on_interrupt)
       VALUES ($1, $2, 'queued', $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
      [j.id, j.projectId, j.requestId, j.permitId, j.operation, j.provider, j.model, JSON.stringify(j.metadata), j.idempotencyKey, j.createdAt, j.retryOnInterrupt === true],
    );
    const job = rows[0];
    await c.query('INSERT INTO job_requests (job_id, request) VALUES ($1, $2)', [j.id, JSON.stringify(j.request)]);
    await appendEvents(c, [jobEvent(job, 'job.submitted', { operation: j.operation, metadata: j.metadata }, j.createdAt)]);
    return job;
  });
}

export async function findJob(db: Queryable, projectId: string, jobId: string): Promise<JobRecord | null> {
  const { rows } = await db.query<JobRecord>('SELECT * FROM jobs WHERE project_id = $1 AND id = $2', [projectId, jobId]);
  return rows[0] ?? null;
}

/** A job's execution request (the claim check of its workflow), or null when the job is gone. */
export async function findJobRequest<T>(db: Queryable, jobId: string): Promise<T | null> {
  const { rows } = await db.query<{ request: T }>('SELECT request FROM job_requests WHERE job_id = $1', [jobId]);
  return rows[0]?.request ?? null;
}

export async function findJobById(db: Queryable, jobId: string): Promise<JobRecord | null> {
  const { rows } = await db.query<JobRecord>('SELECT * FROM jobs WHERE id = $1', [jobId]);
  return rows[0] ?? null;
}

export async function listJobs(
  db: Queryable,
  projectId: string,
  q: { status?: JobStatus; operation?: string; createdAtGte?: Date; createdAtLte?: Date; beforeId?: string; limit: number },
): Promise<JobRecord[]> {
  const { rows } = await db.query<JobRecord>(
    `SELECT * FROM jobs
      WHERE project_id = $1
        AND ($2::text IS NULL OR status = $2)
        AND ($3::text IS NULL OR operation = $3)
        AND ($4::timestamptz IS NULL OR created_at >= $4)
        AND ($5::timestamptz IS NULL OR created_at <= $5)
        AND ($6::text IS NULL OR id < $6)
      ORDER BY id DESC LIMIT $7`,
    [projectId, q.status ?? null, q.operation ?? null, q.createdAtGte ?? null, q.createdAtLte ?? null, q.beforeId ?? null, q.limit],
  );
  return rows;
}

/** `job.queued`: the durable engine took the job (once; `queued_at` guards it). */
export async function markJobQueued(db: Db, jobId: string, at: Date): Promise<void> {
  await withTransaction(db, async (c) => {
    const { rows } = await c.query<JobRecord>(
      "UPDATE jobs SET queued_at = $2 WHERE id = $1 AND queued_at IS NULL AND status = 'queued' RETURNING *",
      [jobId, at],
    );
    if (rows[0]) await appendEvents(c, [jobEvent(rows[0], 'job.queued', {}, at)]);
  });
}

export type SlotOutcome = 'acquired' | 'full' | 'gone';

/**
 * Takes one of the project's `limit` processing slots for a queued job (`job.processing`), under
 * the project's slot lock. A job already processing (a retried activity) keeps its slot; a job
 * that left the queue otherwise (cancelled) is `gone`.
 */
export async function acquireJobSlot(db: Db, jobId: string, limit: number, now: () => Date): Promise<SlotOutcome> {
  // Unlocked pre-check first: while the project is full (a burst of queued jobs re-checking), no
  // one queues on the slot lock.
  const { rows: pre } = await db.query<{ project_id: string; status: JobStatus; processing: number }>(
    `SELECT j.project_id, j.status,
            (SELECT count(*)::int FROM jobs p WHERE p.project_id = j.project_id AND p.status = 'processing') AS processing
       FROM jobs j WHERE j.id = $1`,
    [jobId],
  );
  if (!pre[0]) return 'gone';
  if (pre[0].status === 'processing') return 'acquired';
  if (pre[0].status !== 'queued') return 'gone';
  if (pre[0].processing >= limit) return 'full';
  return withTransaction(db, async (c) => {
    const { rows: cur } = await c.query<Pick<JobRecord, 'project_id' | 'status'>>('SELECT project_id, status FROM jobs WHERE id = $1', [jobId]);
    if (!cur[0]) return 'gone';
    await c.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [JOB_SLOT_LOCK_CLASS, cur[0].project_id]);
    const { rows } = await c.query<JobRecord>('SELECT * FROM jobs WHERE id = $1 FOR UPDATE', [jobId]);
    const job = rows[0];
    if (job.status === 'processing') return 'acquired';
    if (job.status !== 'queued') return 'gone';
    const { rows: n } = await c.query<{ n: number }>("SELECT count(*)::int AS n FROM jobs WHERE project_id = $1 AND status = 'processing'", [job.project_id]);
    if (n[0].n >= limit) return 'full';
    // Read after the lock: started_at is when the slot was taken, not when the request arrived.
    const at = now();
    await c.query("UPDATE jobs SET status = 'processing', started_at = $2 WHERE id = $1", [jobId, at]);
    await appendEvents(c, [jobEvent(job, 'job.processing', { processing_limit: limit }, at)]);
    return 'acquired';
  });
}

/** Counts a dispatch attempt. */
export async function setJobAttempts(db: Queryable, jobId: string, attempts: number): Promise<void> {
  await db.query('UPDATE jobs SET attempts = GREATEST(attempts, $2) WHERE id = $1', [jobId, attempts]);
}

/** The job's dispatch starts (migration 0190): the first dispatch's start, each attempt's instant and prior tries. */
export interface JobDispatch {
  start: DispatchStart;
  attempts: Record<string, [at: string, priorTries: number]>;
}

/**
 * Counts a dispatch attempt and keeps when it started, before the provider is called: the record
 * built after it (by the attempt, or by the workflow when the attempt was lost) derives the call's
 * dispatch events from it. The first dispatch's start is kept once; an attempt's entry is not
 * rewritten.
 */
export async function markJobDispatch(db: Queryable, jobId: string, d: { attempt: number; start: DispatchStart; priorTries: number }): Promise<void> {
  const { attempt, start, priorTries } = d;
  await db.query(
    `UPDATE jobs SET attempts = GREATEST(attempts, $2),
            dispatch = CASE
              WHEN dispatch IS NULL THEN jsonb_build_object('start', $3::jsonb, 'attempts', jsonb_build_object($2::text, jsonb_build_array($4::text, $5::int)))
              WHEN dispatch->'attempts' ? ($2::text) THEN dispatch
              ELSE jsonb_set(dispatch, ARRAY['attempts', $2::text], jsonb_build_array($4::text, $5::int))
            END
      WHERE id = $1`,
    [jobId, attempt, JSON.stringify(start), start.at, priorTries],
  );
}

/** The job's dispatch starts, or null when no attempt started (or it started before migration 0190). */
export async function findJobDispatch(db: Queryable, jobId: string): Promise<JobDispatch | null> {
  const { rows } = await db.query<{ dispatch: JobDispatch | null }>('SELECT dispatch FROM jobs WHERE id = $1', [jobId]);
  return rows[0]?.dispatch ?? null;
}

/**
 * Closes a job (completed, failed or cancelled) with its result and event, once. Returns the
 * oldest job of the project still queued (the one the freed slot wakes), or null.
 */
export async function finishJob(
  db: Db,
  jobId: string,
  f: { status: 'completed' | 'failed' | 'cancelled'; result: ExecutionEnvelope | null; attempts: number; errorCode: string | null; at: Date },
): Promise<{ finished: boolean; nextQueuedJobId: string | null }> {
  return withTransaction(db, async (c) => {
    const { rows } = await c.query<JobRecord>(
      `UPDATE jobs SET status = $2, result = $3, attempts = GREATEST(attempts, $4), error_code = $5, completed_at = $6
        WHERE id = $1 AND status IN ('queued', 'processing') RETURNING *`,
      [jobId, f.status, f.result === null ? null : JSON.stringify(f.result), f.attempts, f.errorCode, f.at],
    );
    const job = rows[0];
    let projectId = job?.project_id;
    if (job) {
      const type = f.status === 'completed' ? 'job.completed' : f.status === 'failed' ? 'job.failed' : 'job.cancelled';
      await appendEvents(c, [
        jobEvent(job, type, {
          status: f.status,
          attempts: job.attempts,
          execution_status: f.result?.status ?? null,
          status_code: f.result?.status_code ?? null,
          error_code: f.errorCode,
        }, f.at),
      ]);
    } else {
      const { rows: cur } = await c.query<{ project_id: string }>('SELECT project_id FROM jobs WHERE id = $1', [jobId]);
      projectId = cur[0]?.project_id;
    }
    if (!projectId) return { finished: false, nextQueuedJobId: null };
    const { rows: next } = await c.query<{ id: string }>("SELECT id FROM jobs WHERE project_id = $1 AND status = 'queued' ORDER BY id LIMIT 1", [projectId]);
    return { finished: Boolean(job), nextQueuedJobId: next[0]?.id ?? null };
  });
}

/**
 * Cancels a queued job at once (`job.cancelled`); a processing job gets `cancel_requested_at` and
 * is closed by its workflow. Returns the job as it stands, or null when absent.
 */
export async function requestJobCancel(db: Db, projectId: string, jobId: string, at: Date): Promise<JobRecord | null> {
  return withTransaction(db, async (c) => {
    const { rows } = await c.query<JobRecord>('SELECT * FROM jobs WHERE project_id = $1 AND id = $2 FOR UPDATE', [projectId, jobId]);
    const job = rows[0];
    if (!job) return null;
    if (job.status === 'queued') {
      const { rows: done } = await c.query<JobRecord>(
        "UPDATE jobs SET status = 'cancelled', cancel_requested_at = $2, completed_at = $2 WHERE id = $1 RETURNING *",
        [jobId, at],
      );
      await appendEvents(c, [jobEvent(job, 'job.cancelled', { status: 'cancelled', attempts: job.attempts, while: 'queued' }, at)]);
      return done[0];
    }
    if (job.status === 'processing' && !job.cancel_requested_at) {
      const { rows: marked } = await c.query<JobRecord>('UPDATE jobs SET cancel_requested_at = $2 WHERE id = $1 RETURNING *', [jobId, at]);
      return marked[0];
    }
    return job;
  });
}

/** Marks a job whose workflow could not be started as failed (submission error). */
export async function failUnstartedJob(db: Db, jobId: string, at: Date): Promise<void> {
  await finishJob(db, jobId, { status: 'failed', result: null, attempts: 0, errorCode: 'job_not_started', at });
}
