import { z } from 'zod';
import { PROVIDER_IDS } from '../config';
import { OPERATIONS } from '../providers/types';

/** Request schemas of the permit-first API (docs/decisions/permit-first.md). */

const micros = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const tokens = z.number().int().min(0).max(100_000_000);
export const keySchema = z.string().min(1).max(255).regex(/^[A-Za-z0-9_.:-]+$/, 'use 1-255 characters of [A-Za-z0-9_.:-]');
const isoTimestamp = z.string().datetime({ offset: true });

/** Tools a permit may name: as many as a provider accepts in one request (OpenAI: 128). */
export const MAX_PERMIT_TOOLS = 128;
/**
 * A tool's name as the proxies read it from a native request: a function's name (OpenAI and
 * Anthropic allow [A-Za-z0-9_-] up to 64 or 128, Gemini also `.` and `:`), or a built-in tool's
 * type (`web_search`, `web_search_20250305`, `googleSearch`).
 */
const toolName = z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'use 1-128 characters of [A-Za-z0-9_.:-] (a function name, or a built-in tool\'s type)');

export const permitRequestSchema = z
  .object({
    project_id: z.string().min(1).max(100),
    idempotency_key: keySchema.optional(),
    operation: z.enum(OPERATIONS).default('generate.text'),
    provider: z.enum(PROVIDER_IDS).optional(),
    model: z.string().min(1).max(200).optional(),
    estimated_input_tokens: tokens.optional(),
    estimated_output_tokens: tokens.optional(),
    estimated_cost_usd_micros: micros.optional(),
    workflow_id: z.string().min(1).max(255).regex(/^[A-Za-z0-9_-]+$/, 'use 1-255 characters of [A-Za-z0-9_-]').optional(),
    /** The caller's downstream route this permit is for; recorded intent, matchable as metadata.route. */
    route: z.string().min(1).max(300).optional(),
    metadata: z.record(z.string().min(1).max(200), z.string().max(1000)).optional(),
    /** Lifetime of an allow (its reservation) or a review permit; default 600 s / 24 h. */
    ttl_seconds: z.number().int().min(1).max(7 * 86400).optional(),
    /**
     * The tools the caller intends to offer the model, by name: a policy rule's `match.tool` sees
     * them and the permit keeps them (its `tools`), as for a proxied request that sends them.
     */
    tools: z
      .array(toolName)
      .max(MAX_PERMIT_TOOLS, `at most ${MAX_PERMIT_TOOLS} tools`)
      .describe('The tools the call will offer the model, by name (a built-in tool by its type), each once: policy rules match them (`match.tool`) and the permit keeps them.')
      .optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    // No estimate at all is allowed: the service derives one from defaults (docs/decisions/permits-without-estimate.md).
    if (b.metadata && Object.keys(b.metadata).length > 50) ctx.addIssue({ code: 'custom', path: ['metadata'], message: 'at most 50 keys' });
    // Each name once, as the permit keeps them: a repeat is a mistake in the caller's list.
    b.tools?.forEach((t, i) => {
      if (b.tools!.indexOf(t) !== i) ctx.addIssue({ code: 'custom', path: ['tools', i], message: `"${t}" is named twice` });
    });
  });
export type PermitRequest = z.infer<typeof permitRequestSchema>;

export const listQuerySchema = z
  .object({
    decision: z.enum(['allow', 'deny', 'review', 'throttle']).optional(),
    reason_code: z.string().min(1).max(200).optional(),
    workflow_id: z.string().min(1).max(255).optional(),
    provider: z.string().min(1).max(50).optional(),
    model: z.string().min(1).max(200).optional(),
    reservation_state: z.enum(['none', 'active', 'settled', 'released', 'expired']).optional(),
    created_after: isoTimestamp.optional(),
    created_before: isoTimestamp.optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict();

export const exportQuerySchema = z
  .object({
    from: isoTimestamp,
    to: isoTimestamp.optional(),
    include_events: z.enum(['true', 'false']).default('true'),
  })
  .strict();

/**
 * Verification material of a completed closeout: the provider's id of the response, plus the
 * provider's usage block verbatim and/or the SHA-256 of the raw provider response body.
 */
export const verificationSchema = z
  .object({
    provider_request_id: z.string().min(1).max(300),
    response_sha256: z.string().regex(/^[0-9a-f]{64}$/, 'lowercase hex SHA-256 of the raw provider response body').optional(),
    provider_usage: z.record(z.string(), z.unknown()).optional(),
  })
  .strict()
  .refine((v) => v.response_sha256 !== undefined || (v.provider_usage !== undefined && Object.keys(v.provider_usage).length > 0), {
    message: 'give response_sha256 or the provider_usage block (or both)',
  });

export const usageSchema = z
  .object({
    usage_idempotency_key: keySchema,
    status: z.enum(['completed', 'failed']),
    input_tokens: tokens.default(0),
    output_tokens: tokens.default(0),
    billed_cost_usd_micros: micros.optional(),
    verification: verificationSchema.optional(),
    error: z.object({ code: z.string().min(1).max(200), message: z.string().max(2000).optional() }).strict().optional(),
    occurred_at: isoTimestamp.optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    if (b.status === 'completed') {
      if (b.verification === undefined) ctx.addIssue({ code: 'custom', path: ['verification'], message: 'a completed report needs verification material' });
      if (b.billed_cost_usd_micros === undefined || b.billed_cost_usd_micros <= 0) {
        ctx.addIssue({ code: 'custom', path: ['billed_cost_usd_micros'], message: 'a completed report needs a positive billed cost' });
      }
    }
  });
export type UsageReport = z.infer<typeof usageSchema>;

export const attestSchema = z
  .object({
    /** The human who signed off (who). */
    attested_by: z.string().min(1).max(300),
    /** Why. */
    reason: z.string().min(1).max(2000),
    /** When the sign-off happened; default now; never in the future. */
    attested_at: isoTimestamp.optional(),
    ttl_seconds: z.number().int().min(1).max(7 * 86400).optional(),
  })
  .strict();

export const revokeSchema = z
  .object({
    reason: z.string().min(1).max(2000),
    /** The person acting; default the admin key (`api_key:<key_id>`). */
    actor: z.string().min(1).max(300).optional(),
  })
  .strict();

export const evidenceSchema = z
  .object({
    type: z.enum(['provider_response', 'tool_output', 'document', 'log', 'approval', 'note', 'other']),
    description: z.string().min(1).max(2000).optional(),
    // Links a dashboard may render: only web URLs (a javascript: or file: link would run or read locally).
    uri: z.url({ protocol: /^https?$/, error: 'an http: or https: URL' }).max(2000).optional(),
    content_sha256: z.string().regex(/^[0-9a-f]{64}$/, 'lowercase hex SHA-256').optional(),
    data: z.record(z.string(), z.unknown()).optional(),
    submitted_by: z.string().min(1).max(300).optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    if (b.uri === undefined && b.content_sha256 === undefined && b.data === undefined && b.description === undefined) {
      ctx.addIssue({ code: 'custom', path: [], message: 'give at least one of uri, content_sha256, data, description' });
    }
    if (b.data !== undefined && JSON.stringify(b.data).length > 16_384) ctx.addIssue({ code: 'custom', path: ['data'], message: 'at most 16 KiB of JSON' });
  });
