/** Managed MCP servers (table `mcp_servers`, migration 0141). */
import type { Queryable } from '../pool';

export interface McpServerRecord {
  id: string;
  project_id: string;
  server_ref: string;
  url: string;
  description: string | null;
  credential_type: 'bearer' | 'header' | null;
  credential_header: string | null;
  credential_encrypted: string | null;
  allowed_tools: string[];
  created_at: Date;
  updated_at: Date;
}

export type McpServerFields = Omit<McpServerRecord, 'created_at' | 'updated_at'>;

/** Null when the project already has a server with this server_ref. */
export async function insertMcpServer(db: Queryable, s: McpServerFields): Promise<McpServerRecord | null> {
  const { rows } = await db.query<McpServerRecord>(
    `INSERT INTO mcp_servers (id, project_id, server_ref, url, description, credential_type, credential_header, credential_encrypted, allowed_tools)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (project_id, server_ref) DO NOTHING RETURNING *`,
    [s.id, s.project_id, s.server_ref, s.url, s.description, s.credential_type, s.credential_header, s.credential_encrypted, s.allowed_tools],
  );
  return rows[0] ?? null;
}

export async function updateMcpServer(db: Queryable, s: McpServerFields): Promise<McpServerRecord | null> {
  const { rows } = await db.query<McpServerRecord>(
    `UPDATE mcp_servers SET url = $3, description = $4, credential_type = $5, credential_header = $6, credential_encrypted = $7, allowed_tools = $8, updated_at = now()
     WHERE project_id = $1 AND server_ref = $2 RETURNING *`,
    [s.project_id, s.server_ref, s.url, s.description, s.credential_type, s.credential_header, s.credential_encrypted, s.allowed_tools],
  );
  return rows[0] ?? null;
}

export async function findMcpServer(db: Queryable, projectId: string, serverRef: string): Promise<McpServerRecord | null> {
  const { rows } = await db.query<McpServerRecord>('SELECT * FROM mcp_servers WHERE project_id = $1 AND server_ref = $2', [projectId, serverRef]);
  return rows[0] ?? null;
}

export async function listMcpServers(db: Queryable, projectId: string): Promise<McpServerRecord[]> {
  const { rows } = await db.query<McpServerRecord>('SELECT * FROM mcp_servers WHERE project_id = $1 ORDER BY server_ref LIMIT 500', [projectId]);
  return rows;
}

export async function deleteMcpServer(db: Queryable, projectId: string, serverRef: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM mcp_servers WHERE project_id = $1 AND server_ref = $2', [projectId, serverRef]);
  return (rowCount ?? 0) > 0;
}
