/**
 * What the jobWorkflow shares with its callers (the API, other job workflows): its id, its signal
 * and its input. Safe to import outside the workflow sandbox.
 */
import { defineSignal } from '@temporalio/workflow';
import type { ExecutionEnvelope } from '../src/executions/envelope';
import type { ExecutionInput } from '../src/executions/types';

/** Sent by a finishing job to the oldest queued job of its project: a processing slot is free. */
export const slotFreedSignal = defineSignal('slotFreed');

export function jobWorkflowId(jobId: string): string {
  return `job:${jobId}`;
}

export interface JobLimits {
  /** Jobs of one project in processing at once; the others wait queued. */
  maxProcessing: number;
  /** Dispatch attempts of one job (retryable upstream failures: 429, 5xx, timeouts, network). */
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** Cap on an upstream Retry-After. */
  retryAfterMaxMs: number;
  /**
   * The caller's opt-in (`retry_on_interrupt`): an attempt that does not report back (worker died)
   * is dispatched again, within maxAttempts, instead of closing `dispatch_interrupted`. The call may
   * then reach the provider twice. Absent in jobs submitted before the option: false.
   */
  retryOnInterrupt?: boolean;
}

/**
 * The execution a job runs, as its workflow and activities carry it: everything but the request,
 * which is stored with the job (table job_requests) and loaded by the activities by job id (the
 * claim check), so no workflow or activity input grows with what the caller sent. Workflows started
 * before the claim check carry `request` inline; the activities use it when present.
 */
export type JobExecution = Omit<ExecutionInput, 'request' | 'jobId'> & {
  jobId: string;
  request?: ExecutionInput['request'];
  /** The intent lease the job's call was taken from at submission (recorded in its permit's metadata). */
  intentLease?: string;
};

export interface JobInput {
  jobId: string;
  projectId: string;
  /** The API key that submitted the job (usage by key); absent in jobs submitted before it was recorded. */
  keyId?: string;
  execution: JobExecution;
  limits: JobLimits;
}

export interface JobOutcome {
  status: 'completed' | 'failed' | 'cancelled';
  result: ExecutionEnvelope | null;
  attempts: number;
}

/** Wait before dispatch attempt `next` (2, 3, …): exponential backoff, at least the upstream Retry-After (capped). */
export function retryDelayMs(limits: JobLimits, next: number, retryAfterSeconds: number | null): number {
  const backoff = Math.min(limits.retryMaxMs, limits.retryBaseMs * 2 ** (next - 2));
  const after = retryAfterSeconds === null ? 0 : Math.min(limits.retryAfterMaxMs, retryAfterSeconds * 1000);
  return Math.max(backoff, after);
}
