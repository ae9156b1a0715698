import { z } from 'zod';
import { PROVIDER_IDS } from '../../config';

/** The surfaces a call record names (`calls.route`, migration 0290). */
const CALL_ROUTES = ['executions', 'execute', 'proxy', 'sessions'] as const;

/** The request log's call object (docs/decisions/request-log.md): one governed call, without its content. */
export const callSchema = z
  .looseObject({
    id: z.string().meta({ description: 'The request id (timeline: GET /v1/requests/{id}/timeline)', example: 'exec_req_01a2…' }),
    object: z.literal('call'),
    created_at: z.string(),
    completed_at: z.string(),
    duration_ms: z.number().int(),
    route: z.enum(CALL_ROUTES),
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
    session_id: z.string().nullable().meta({ description: 'The realtime session whose turn the call is (route `sessions`)' }),
  })
  .meta({ id: 'Call' });

export const callListSchema = z
  .looseObject({ object: z.literal('list'), data: z.array(callSchema), next_cursor: z.string().nullable() })
  .meta({ id: 'CallList' });

export const callListQuery = z
  .object({
    status: z.enum(['completed', 'failed', 'denied']).optional(),
    route: z.enum(CALL_ROUTES).optional(),
    provider: z.enum(PROVIDER_IDS).optional(),
    model: z.string().min(1).max(200).optional(),
    key_id: z.string().min(1).max(200).optional(),
    workflow_id: z.string().min(1).max(255).optional(),
    job_id: z.string().min(1).max(200).optional(),
    session_id: z.string().min(1).max(200).optional(),
    created_at_gte: z.iso.datetime({ offset: true }).optional(),
    created_at_lte: z.iso.datetime({ offset: true }).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(50),
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict();

/** The longest window GET /v1/metrics/calls answers, and the most buckets it draws in one. */
export const CALL_METRICS_MAX_WINDOW_SECONDS = 31 * 86400;
export const CALL_METRICS_MAX_BUCKETS = 500;

export const callMetricsQuery = z
  .object({
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
    bucket_seconds: z.coerce.number().int().min(10).max(86400).default(60),
  })
  .strict();

const count = z.number().int();
const latency = z.number().int().nullable();

export const callMetricsSchema = z
  .looseObject({
    object: z.literal('call_metrics'),
    window: z.looseObject({ from: z.string(), to: z.string(), bucket_seconds: count }),
    series: z.array(
      z.looseObject({ start: z.string(), completed: count, failed: count, denied: count, p50_ms: latency, p95_ms: latency }).meta({ id: 'CallMetricsBucket' }),
    ),
    totals: z.looseObject({
      calls: count,
      completed: count,
      failed: count,
      denied: count,
      error_rate: z.number().meta({ description: 'failed / calls (0 without calls)' }),
      denial_rate: z.number().meta({ description: 'denied / calls (0 without calls)' }),
      p50_ms: latency.meta({ description: 'Median duration of the calls that were not denied' }),
      p95_ms: latency,
      cost_usd_micros: count,
    }),
    by_model: z.array(z.looseObject({ provider: z.string(), model: z.string().nullable(), calls: count, cost_usd_micros: count })),
    by_key: z.array(z.looseObject({ key_id: z.string().nullable(), calls: count, cost_usd_micros: count })),
  })
  .meta({ id: 'CallMetrics' });

export const governanceMetricsQuery = z
  .object({
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
  })
  .strict();

export const governanceMetricsSchema = z
  .looseObject({
    object: z.literal('governance_metrics'),
    window: z.looseObject({ from: z.string(), to: z.string() }),
    totals: z.looseObject({ decisions: count, allow: count, deny: count, review: count, throttle: count }),
    decisions: z
      .array(z.looseObject({ decision: z.enum(['allow', 'deny', 'review', 'throttle']), reason_code: z.string(), count }))
      .meta({ description: 'Governance decisions of the window by decision and reason code, most frequent first' }),
    firewall: z
      .array(z.looseObject({ action: z.enum(['blocked', 'redacted', 'flagged']), category: z.string(), count }))
      .meta({ description: 'Firewall actions by action and category (a decision counts once per category it names); categories only, never text' }),
  })
  .meta({ id: 'GovernanceMetrics' });
