import { z } from 'zod';
import { PROVIDER_IDS } from '../../config';

/** The request log's call object (docs/decisions.md, "The request log"): one governed call, without its content. */
export const callSchema = z
  .looseObject({
    id: z.string().meta({ description: 'The request id (timeline: GET /v1/requests/{id}/timeline)', example: 'exec_req_01a2…' }),
    object: z.literal('call'),
    created_at: z.string(),
    completed_at: z.string(),
    duration_ms: z.number().int(),
    route: z.enum(['executions', 'execute', 'proxy']),
    operation: z.string(),
    mode: z.enum(['sync', 'stream']),
    status: z.enum(['completed', 'failed', 'denied']),
    status_code: z.number().int(),
    provider: z.string().nullable(),
    model: z.string().nullable(),
    usage: z.looseObject({
      input_tokens: z.number().int(),
      output_tokens: z.number().int(),
      cost_usd_micros: z.number().int(),
      estimated_final: z.boolean(),
    }),
    error: z.looseObject({ code: z.string() }).nullable(),
    permit_id: z.string().nullable(),
    key_id: z.string().nullable(),
    workflow_id: z.string().nullable(),
    job_id: z.string().nullable(),
  })
  .meta({ id: 'Call' });

export const callListSchema = z
  .looseObject({ object: z.literal('list'), data: z.array(callSchema), next_cursor: z.string().nullable() })
  .meta({ id: 'CallList' });

export const callListQuery = z
  .object({
    status: z.enum(['completed', 'failed', 'denied']).optional(),
    route: z.enum(['executions', 'execute', 'proxy']).optional(),
    provider: z.enum(PROVIDER_IDS).optional(),
    model: z.string().min(1).max(200).optional(),
    key_id: z.string().min(1).max(200).optional(),
    workflow_id: z.string().min(1).max(255).optional(),
    job_id: z.string().min(1).max(200).optional(),
    created_at_gte: z.iso.datetime({ offset: true }).optional(),
    created_at_lte: z.iso.datetime({ offset: true }).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(50),
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict();
