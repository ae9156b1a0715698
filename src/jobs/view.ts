import type { JobRecord } from '../db/repositories/jobs';
import type { ExecutionEnvelope } from '../executions/envelope';

/** The job object (docs/decisions/jobs.md). */
export interface JobView {
  id: string;
  object: 'job';
  status: JobRecord['status'];
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  attempts: number;
  request_id: string;
  permit_id: string;
  operation: string;
  metadata: Record<string, string>;
  cancel_requested: boolean;
  retry_on_interrupt: boolean;
  error: { code: string } | null;
  result: ExecutionEnvelope | null;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

export function jobView(j: JobRecord): JobView {
  return {
    id: j.id,
    object: 'job',
    status: j.status,
    created_at: new Date(j.created_at).toISOString(),
    started_at: iso(j.started_at),
    completed_at: iso(j.completed_at),
    attempts: j.attempts,
    request_id: j.request_id,
    permit_id: j.permit_id,
    operation: j.operation,
    metadata: j.metadata ?? {},
    cancel_requested: j.cancel_requested_at !== null,
    retry_on_interrupt: j.retry_on_interrupt === true,
    error: j.error_code ? { code: j.error_code } : null,
    result: j.result ?? null,
  };
}
