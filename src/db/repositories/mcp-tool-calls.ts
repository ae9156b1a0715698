/** Managed MCP tool calls: idempotency claims and evidence (table `mcp_tool_calls`, migration 0141). */
import type { Queryable } from '../pool';
import { appendEvents } from './events';
import type { NewEvent } from '../../events/types';

export interface McpToolCallRecord {
  id: string;
  project_id: string;
  server_ref: string;
  tool_name: string;
  key_id: string;
  permit_id: string | null;
  session_id: string | null;
  workflow_id: string | null;
  idempotency_key: string | null;
  binding_sha256: string;
  stream: boolean;
  status: 'in_progress' | 'completed';
  outcome: 'success' | 'tool_error' | 'protocol_error' | 'denied' | null;
  arguments_sha256: string;
  result_sha256: string | null;
  error: { code: string | number; message: string } | null;
  duration_ms: number | null;
  http_status: number | null;
  response: Record<string, unknown> | null;
  started_at: Date;
  finished_at: Date | null;
}

export type NewMcpToolCall = Pick<McpToolCallRecord, 'id' | 'project_id' | 'server_ref' | 'tool_name' | 'key_id' | 'session_id' | 'workflow_id' | 'idempotency_key' | 'binding_sha256' | 'stream' | 'arguments_sha256' | 'started_at'>;

/** Claims the call (and its idempotency key); null when the key is already claimed. */
export async function claimMcpToolCall(db: Queryable, c: NewMcpToolCall): Promise<McpToolCallRecord | null> {
  const { rows } = await db.query<McpToolCallRecord>(
    `INSERT INTO mcp_tool_calls (id, project_id, server_ref, tool_name, key_id, session_id, workflow_id, idempotency_key, binding_sha256, stream, status, arguments_sha256, started_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'in_progress', $11, $12)
     ON CONFLICT (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING RETURNING *`,
    [c.id, c.project_id, c.server_ref, c.tool_name, c.key_id, c.session_id, c.workflow_id, c.idempotency_key, c.binding_sha256, c.stream, c.arguments_sha256, c.started_at],
  );
  return rows[0] ?? null;
}

export async function findMcpToolCallByKey(db: Queryable, projectId: string, key: string): Promise<McpToolCallRecord | null> {
  const { rows } = await db.query<McpToolCallRecord>('SELECT * FROM mcp_tool_calls WHERE project_id = $1 AND idempotency_key = $2', [projectId, key]);
  return rows[0] ?? null;
}

/**
 * Records the outcome and its event. A denial frees the idempotency key (a retry is decided
 * afresh); any other outcome keeps it for replay.
 */
export async function finishMcpToolCall(
  db: Queryable,
  id: string,
  f: Pick<McpToolCallRecord, 'permit_id' | 'outcome' | 'result_sha256' | 'error' | 'duration_ms' | 'http_status' | 'response' | 'finished_at'>,
  events: NewEvent[],
): Promise<void> {
  await db.query(
    `UPDATE mcp_tool_calls SET status = 'completed', permit_id = $2, outcome = $3, result_sha256 = $4, error = $5, duration_ms = $6, http_status = $7,
       response = $8, finished_at = $9, idempotency_key = CASE WHEN $3 = 'denied' THEN NULL ELSE idempotency_key END
     WHERE id = $1`,
    [id, f.permit_id, f.outcome, f.result_sha256, f.error ? JSON.stringify(f.error) : null, f.duration_ms, f.http_status, f.response ? JSON.stringify(f.response) : null, f.finished_at],
  );
  await appendEvents(db, events);
}

export async function listMcpToolCallsByPermit(db: Queryable, projectId: string, permitId: string): Promise<McpToolCallRecord[]> {
  const { rows } = await db.query<McpToolCallRecord>('SELECT * FROM mcp_tool_calls WHERE project_id = $1 AND permit_id = $2 ORDER BY started_at, id', [projectId, permitId]);
  return rows;
}

export async function listMcpToolCallsBySession(db: Queryable, projectId: string, sessionId: string, limit = 500): Promise<McpToolCallRecord[]> {
  const { rows } = await db.query<McpToolCallRecord>('SELECT * FROM mcp_tool_calls WHERE project_id = $1 AND session_id = $2 ORDER BY started_at, id LIMIT $3', [projectId, sessionId, limit]);
  return rows;
}
