/**
 * The per-project MCP server registry: the credential is sealed with the secret box (purpose bound
 * to project and server_ref) and never shown again; URLs must pass the outbound address rules of
 * webhooks (no loopback/private/metadata targets unless WEBHOOK_ALLOWED_HOSTS lists them).
 */
import type { Config } from '../config';
import type { Db } from '../db/pool';
import { errors } from '../errors';
import { newId } from '../ids';
import { secretBox } from '../crypto/secret-box';
import { allowList, checkedAddresses } from '../webhooks/ssrf';
import { globMatch } from '../governance/match';
import { findMcpServer, insertMcpServer, updateMcpServer, type McpServerRecord } from '../db/repositories/mcp-servers';
import type { CreateServerBody, UpdateServerBody } from './schemas';
import type { McpTarget } from './client';

const purpose = (projectId: string, serverRef: string) => `mcp-server-credential:${projectId}:${serverRef}`;

export function serverView(s: McpServerRecord) {
  return {
    server_ref: s.server_ref,
    object: 'mcp_server' as const,
    url: s.url,
    description: s.description,
    allowed_tools: s.allowed_tools,
    credential: s.credential_type ? { type: s.credential_type, ...(s.credential_header ? { header: s.credential_header } : {}), configured: true } : null,
    created_at: new Date(s.created_at).toISOString(),
    updated_at: new Date(s.updated_at).toISOString(),
  };
}

/** Refuses URLs resolving to internal addresses (400), checked at registration and before every call. */
export async function checkServerUrl(config: Config, url: string): Promise<void> {
  try {
    await checkedAddresses(new URL(url).hostname, allowList(config.webhooks.allowedHosts));
  } catch (err) {
    throw errors.validation([{ path: 'url', message: (err as Error).message, code: 'url_not_allowed' }]);
  }
}

/** A project's MCP server by its ref. */
interface ServerKey {
  projectId: string;
  serverRef: string;
}

/** A server's credential sealed for storage (the server it is sealed to is part of its purpose). */
async function sealed(db: Db, config: Config, server: ServerKey, c: CreateServerBody['credential'] | null | undefined) {
  if (!c) return { credential_type: null, credential_header: null, credential_encrypted: null };
  const box = await secretBox(db, config);
  const secret = c.type === 'bearer' ? c.token : c.value;
  return { credential_type: c.type, credential_header: c.type === 'header' ? c.name : null, credential_encrypted: box.seal(secret, purpose(server.projectId, server.serverRef)) };
}

export async function registerServer(db: Db, config: Config, projectId: string, b: CreateServerBody) {
  await checkServerUrl(config, b.url);
  const row = await insertMcpServer(db, {
    id: newId('mcps'), project_id: projectId, server_ref: b.server_ref, url: b.url, description: b.description ?? null, allowed_tools: b.allowed_tools,
    ...(await sealed(db, config, { projectId, serverRef: b.server_ref }, b.credential)),
  });
  if (!row) throw errors.conflict('mcp.server_exists', `MCP server ${b.server_ref} is already registered`, { server_ref: b.server_ref });
  return serverView(row);
}

export async function changeServer(db: Db, config: Config, server: ServerKey, b: UpdateServerBody) {
  const { projectId, serverRef } = server;
  const s = await findMcpServer(db, projectId, serverRef);
  if (!s) throw errors.notFound('MCP server', serverRef);
  if (b.url) await checkServerUrl(config, b.url);
  const cred = b.credential === undefined ? { credential_type: s.credential_type, credential_header: s.credential_header, credential_encrypted: s.credential_encrypted } : await sealed(db, config, server, b.credential);
  const row = await updateMcpServer(db, {
    ...s, url: b.url ?? s.url, description: b.description === undefined ? s.description : b.description, allowed_tools: b.allowed_tools ?? s.allowed_tools, ...cred,
  });
  if (!row) throw errors.notFound('MCP server', serverRef);
  return serverView(row);
}

export function toolAllowed(s: McpServerRecord, tool: string): boolean {
  return s.allowed_tools.some((p) => globMatch(p, tool));
}

/**
 * Where and how to call the server (the credential opened only here, in memory), with the secrets
 * to scrub from upstream error text.
 */
export async function serverTarget(db: Db, config: Config, s: McpServerRecord): Promise<McpTarget> {
  const headers: Record<string, string> = {};
  const secrets: string[] = [];
  if (s.credential_type && s.credential_encrypted) {
    const secret = (await secretBox(db, config)).open(s.credential_encrypted, purpose(s.project_id, s.server_ref));
    secrets.push(secret);
    if (s.credential_type === 'bearer') headers.authorization = `Bearer ${secret}`;
    else headers[s.credential_header!] = secret;
  }
  return { url: s.url, headers, secrets, allow: allowList(config.webhooks.allowedHosts) };
}
