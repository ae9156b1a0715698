import { z } from 'zod';

/** Realtime sessions, voice events and managed MCP tool calls (docs/decisions/sessions.md). */

const iso = z.string();
const micros = z.number().int();

export const sessionSchema = z
  .looseObject({
    id: z.string(),
    object: z.literal('session'),
    status: z.string(),
    provider: z.string(),
    model: z.string(),
    limits: z.looseObject({ max_turns: z.number().int().nullable(), max_cost_usd_micros: micros.nullable(), max_duration_seconds: z.number().int().nullable(), idle_timeout_seconds: z.number().int().nullable() }),
    usage: z.looseObject({ turns: z.number().int(), spent_usd_micros: micros, reserved_usd_micros: micros }),
    started_at: iso,
    expires_at: iso.nullable(),
    ended_at: iso.nullable(),
  })
  .meta({ id: 'Session' });

/** A turn or an action permit with its decision. */
export const sessionDecisionSchema = z
  .looseObject({
    id: z.string(),
    object: z.enum(['session.turn', 'session.action_permit']),
    session_id: z.string(),
    decision: z.string(),
    reason_code: z.string(),
    permit_id: z.string().nullable(),
    estimated_cost_usd_micros: micros,
    cost_usd_micros: micros.nullable(),
    settled: z.boolean(),
    created_at: iso,
  })
  .meta({ id: 'SessionDecision' });

export const sessionInterruptionSchema = z
  .looseObject({ id: z.string(), object: z.literal('session.interruption'), session_id: z.string(), recorded_at: iso })
  .meta({ id: 'SessionInterruption' });

export const searchEvidenceSchema = z
  .looseObject({ id: z.string(), object: z.literal('session.search_evidence'), session_id: z.string(), query: z.string(), results: z.array(z.unknown()), created_at: iso })
  .meta({ id: 'SearchEvidence' });

export const voiceEventResultsSchema = z
  .looseObject({ object: z.literal('list'), session_id: z.string(), data: z.array(z.looseObject({})) })
  .meta({ id: 'VoiceEventResults' });

export const mcpServerSchema = z
  .looseObject({
    server_ref: z.string(),
    object: z.literal('mcp_server'),
    url: z.string(),
    description: z.string().nullable(),
    allowed_tools: z.array(z.string()).nullable(),
    credential: z.union([z.looseObject({ type: z.string(), configured: z.literal(true) }), z.null()]),
    created_at: iso,
    updated_at: iso,
  })
  .meta({ id: 'McpServer' });

export const mcpServerListSchema = z.looseObject({ object: z.literal('list'), data: z.array(mcpServerSchema) }).meta({ id: 'McpServerList' });

export const mcpToolCallSchema = z
  .looseObject({
    id: z.string(),
    object: z.literal('mcp_tool_call'),
    server_ref: z.string(),
    tool_name: z.string(),
    permit_id: z.string().nullable(),
    status: z.string(),
    outcome: z.string().nullable(),
    arguments_sha256: z.string(),
    started_at: iso,
  })
  .meta({ id: 'McpToolCall' });

export const mcpToolCallListSchema = z.looseObject({ object: z.literal('list'), data: z.array(mcpToolCallSchema) }).meta({ id: 'McpToolCallList' });
