/** Request schemas of the managed MCP routes (docs/decisions/managed-mcp-tool-calls.md). */
import { z } from 'zod';
import { WORKFLOW_ID_PATTERN } from '../executions/schema';
import { deniedHeaderName, HEADER_VALUE_MESSAGE, HEADER_VALUE_PATTERN } from './credentials';

export const SERVER_REF_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const toolPattern = z.string().min(1).max(200).regex(/^[A-Za-z0-9_.*/-]+$/, 'tool names or patterns of [A-Za-z0-9_./-] and *');

// The value is sent as a header value (the token as `Authorization: Bearer <token>`), so it must be
// one; messages never quote the value (they reach the 400 body).
const headerValue = z.string().min(1).max(4000).regex(HEADER_VALUE_PATTERN, HEADER_VALUE_MESSAGE);
const headerName = z
  .string()
  .max(100)
  .superRefine((name, ctx) => {
    const why = deniedHeaderName(name);
    if (why) ctx.addIssue({ code: 'custom', message: why });
  });

const credentialSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('bearer'), token: headerValue }).strict(),
  z.object({ type: z.literal('header'), name: headerName, value: headerValue }).strict(),
]);

export const createServerSchema = z
  .object({
    server_ref: z.string().regex(SERVER_REF_PATTERN, 'server_ref must be 1 to 64 characters of [A-Za-z0-9_-]'),
    url: z.url({ protocol: /^https?$/ }).max(2000),
    description: z.string().max(500).optional(),
    credential: credentialSchema.optional(),
    allowed_tools: z.array(toolPattern).min(1).max(500),
  })
  .strict();

export const updateServerSchema = z
  .object({
    url: z.url({ protocol: /^https?$/ }).max(2000).optional(),
    description: z.string().max(500).nullable().optional(),
    credential: credentialSchema.nullable().optional(),
    allowed_tools: z.array(toolPattern).min(1).max(500).optional(),
  })
  .strict();

export const toolCallSchema = z
  .object({
    arguments: z.record(z.string(), z.unknown()).default({}),
    idempotency_key: z.string().min(1).max(255).optional(),
    session_id: z.string().min(1).max(100).optional(),
    workflow_id: z.string().regex(WORKFLOW_ID_PATTERN).optional(),
    estimated_cost_usd_micros: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
    stream: z.boolean().default(false),
    metadata: z.record(z.string().min(1).max(100), z.string().max(500)).optional(),
  })
  .strict();

export type CreateServerBody = z.infer<typeof createServerSchema>;
export type UpdateServerBody = z.infer<typeof updateServerSchema>;
export type ToolCallBody = z.infer<typeof toolCallSchema>;
