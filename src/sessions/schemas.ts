/** Request schemas of the session routes (docs/decisions/sessions.md). */
import { z } from 'zod';
import { PROVIDER_IDS } from '../config';
import { WORKFLOW_ID_PATTERN } from '../executions/schema';

const micros = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const tokens = z.number().int().min(0).max(1_000_000_000);
const clientId = z.string().min(1).max(100).regex(/^[A-Za-z0-9._:-]+$/, 'use 1 to 100 characters of [A-Za-z0-9._:-]');
const metadata = z.record(z.string().min(1).max(100), z.string().max(500)).refine((m) => Object.keys(m).length <= 32, 'at most 32 metadata keys');
const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'a lowercase hex SHA-256');

/**
 * An intent, named in the body or by `X-Svc-Workflow-Id`. On a turn or an action it is checked as at
 * creation and must be the session's (src/sessions/turns.ts).
 */
const workflowId = z.string().regex(WORKFLOW_ID_PATTERN, 'workflow_id must be 1 to 255 characters of [A-Za-z0-9_-]');

export const DEFAULT_IDLE_TIMEOUT_SECONDS = 300;
export const MAX_SESSION_SECONDS = 7 * 24 * 3600;

export const createSessionSchema = z
  .object({
    provider: z.enum(PROVIDER_IDS).optional(),
    model: z.string().min(1).max(200),
    modality: z.enum(['text', 'voice']).default('text'),
    workflow_id: workflowId.optional(),
    max_turns: z.number().int().min(1).max(1_000_000).optional(),
    max_cost_usd_micros: micros.optional(),
    max_duration_seconds: z.number().int().min(1).max(MAX_SESSION_SECONDS).optional(),
    idle_timeout_seconds: z.number().int().min(1).max(MAX_SESSION_SECONDS).default(DEFAULT_IDLE_TIMEOUT_SECONDS),
    metadata: metadata.optional(),
    idempotency_key: z.string().min(1).max(255).optional(),
  })
  .strict();

export const usageSchema = z
  .object({
    input_tokens: tokens.optional(),
    output_tokens: tokens.optional(),
    cached_input_tokens: tokens.optional(),
    input_audio_tokens: tokens.optional(),
    output_audio_tokens: tokens.optional(),
    cached_input_audio_tokens: tokens.optional(),
  })
  .strict();

export const turnSchema = z
  .object({
    turn_id: clientId.optional(),
    workflow_id: workflowId.optional(),
    role: z.enum(['user', 'assistant', 'system', 'tool']).default('user'),
    text: z.string().max(1_000_000).optional(),
    transcript: z.string().max(1_000_000).optional(),
    estimated_output_tokens: tokens.optional(),
    usage: usageSchema.optional(),
  })
  .strict();

export const actionPermitSchema = z
  .object({
    action_id: clientId.optional(),
    workflow_id: workflowId.optional(),
    tool_name: z.string().min(1).max(200),
    arguments: z.record(z.string(), z.unknown()).optional(),
    arguments_sha256: sha256Hex.optional(),
    estimated_cost_usd_micros: micros.default(0),
    metadata: metadata.optional(),
  })
  .strict()
  .refine((b) => !(b.arguments !== undefined && b.arguments_sha256 !== undefined), { message: 'Send arguments or arguments_sha256, not both' });

export const interruptionSchema = z
  .object({
    type: z.enum(['barge_in', 'cancel', 'truncate', 'other']).default('barge_in'),
    turn_id: clientId.optional(),
    audio_end_ms: z.number().int().min(0).max(1_000_000_000).optional(),
    reason: z.string().max(500).optional(),
  })
  .strict();

export const endSessionSchema = z
  .object({
    status: z.enum(['ended', 'failed']).default('ended'),
    reason: z.string().min(1).max(200).optional(),
    error: z.object({ code: z.string().min(1).max(100), message: z.string().max(1000) }).strict().optional(),
  })
  .strict();

export const searchEvidenceSchema = z
  .object({
    query: z.string().min(1).max(10_000),
    provider: z.string().min(1).max(100).optional(),
    turn_id: clientId.optional(),
    results: z
      .array(
        z
          .object({
            // Only web URLs: results are links a dashboard may render (no javascript:, file:, data:).
            url: z.url({ protocol: /^https?$/, error: 'an http: or https: URL' }).max(4000),
            title: z.string().max(1000).optional(),
            content_sha256: sha256Hex.optional(),
            retrieved_at: z.iso.datetime({ offset: true }).optional(),
            rank: z.number().int().min(0).max(10_000).optional(),
          })
          .strict(),
      )
      .max(100),
  })
  .strict();

export const eventsQuerySchema = z.object({ after: z.coerce.number().int().min(0).optional() }).strict();

export type CreateSessionBody = z.infer<typeof createSessionSchema>;
export type TurnBody = z.infer<typeof turnSchema>;
export type UsageBody = z.infer<typeof usageSchema>;
export type ActionPermitBody = z.infer<typeof actionPermitSchema>;
export type InterruptionBody = z.infer<typeof interruptionSchema>;
