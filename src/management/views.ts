/** JSON shapes of the management API (one place, so the dashboard sees one style). */
import type { ApiKeyRecord } from '../db/repositories/api-keys';
import type { Project } from '../db/repositories/projects';
import type { Role } from '../db/repositories/users';
import { cursorPage, encodeCursor } from '../api/cursor';

const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);

export function projectView(p: Omit<Project, 'retention_days'> & { retention_days?: number | null }, role: Role | null) {
  return { id: p.id, object: 'project', name: p.name, plan: p.plan, retention_days: p.retention_days ?? null, role, created_at: iso(p.created_at) };
}

export function apiKeyView(k: ApiKeyRecord, now = new Date()) {
  const expired = k.expires_at !== null && new Date(k.expires_at).getTime() <= now.getTime();
  return {
    id: k.id,
    object: 'api_key',
    project_id: k.project_id,
    name: k.name,
    scope: k.scope,
    key_prefix: k.key_prefix,
    status: k.revoked_at ? 'revoked' : expired ? 'expired' : 'active',
    created_at: iso(k.created_at),
    created_by: k.created_by,
    expires_at: iso(k.expires_at),
    revoked_at: iso(k.revoked_at),
  };
}

/** A list page of rows ordered by (created_at, id): the cursor names the last row's pair. */
export function listPage<R extends { created_at: Date; id: string }, V>(rows: R[], limit: number, view: (r: R) => V) {
  return cursorPage(rows, limit, view, (last) => encodeCursor({ at: new Date(last.created_at).toISOString(), id: last.id }));
}
