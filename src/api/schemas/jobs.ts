import { z } from 'zod';
import { executionEnvelopeSchema } from './executions';

/** The job object (docs/decisions/jobs.md): its result is the execution envelope once it ran. */
export const jobSchema = z
  .looseObject({
    id: z.string().meta({ example: 'job_01a2…' }),
    object: z.literal('job'),
    status: z.enum(['queued', 'processing', 'completed', 'failed', 'cancelled']),
    created_at: z.string(),
    started_at: z.string().nullable(),
    completed_at: z.string().nullable(),
    attempts: z.number().int(),
    request_id: z.string(),
    permit_id: z.string(),
    operation: z.string(),
    metadata: z.record(z.string(), z.string()),
    cancel_requested: z.boolean(),
    retry_on_interrupt: z.boolean().meta({ description: 'Whether a call interrupted by a worker death is dispatched again (the caller\'s opt-in; the provider may see it twice)' }),
    error: z.looseObject({ code: z.string() }).nullable(),
    result: z.union([executionEnvelopeSchema, z.null()]),
  })
  .meta({ id: 'Job' });

export const jobListSchema = z
  .looseObject({ object: z.literal('list'), data: z.array(jobSchema), next_cursor: z.string().nullable() })
  .meta({ id: 'JobList' });
