import { z } from 'zod';
import { errorSchema } from './error';

/**
 * The execution envelope (spec, "Execution envelope"), documented loosely: the fields every
 * envelope carries are required, the rest of the spec's fields pass through.
 */
export const executionEnvelopeSchema = z
  .looseObject({
    id: z.string().meta({ example: 'exec_req_01a2090a6ba6722da74f40840c79e55e' }),
    object: z.literal('execution'),
    created_at: z.iso.datetime(),
    status: z.string(),
    status_code: z.number().int(),
    output: z.looseObject({}).nullable(),
    routing: z.looseObject({}),
    governance: z.looseObject({}),
    usage: z.looseObject({ input_tokens: z.number().int(), output_tokens: z.number().int(), total_tokens: z.number().int(), cost_usd_micros: z.number().int() }),
    timing: z.object({ started_at: z.iso.datetime(), completed_at: z.iso.datetime(), duration_ms: z.number() }),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
  })
  .meta({ id: 'ExecutionEnvelope', description: 'Outcome of a governed execution; failures (deny, throttle, upstream errors) answer with the same envelope' });

/** A failed execution answers either with the envelope (governed outcome) or with the error object (request-level failure). */
export const executionFailureSchema = z.union([errorSchema, executionEnvelopeSchema]);
