/** JSON shapes of the management API (one place, so the dashboard sees one style). */
import type { ApiKeyRecord } from '../db/repositories/api-keys';
import type { Project } from '../db/repositories/projects';
import type { Role } from '../db/repositories/users';
import { encodeCursor } from '../api/cursor';

const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);

export function projectView(p: Project, role: Role | null) {
  return { id: p.id, object: 'project', name: p.name, plan: p.plan, role, created_at: iso(p.created_at) };
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

/** `{object: "list", data, next_cursor}` from `limit + 1` rows ordered by (created_at, id). */
export function listPage<R extends { created_at: Date; id: string }, V>(rows: R[], limit: number, view: (r: R) => V) {
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  const last = page[page.length - 1];
  return {
    object: 'list' as const,
    data: page.map(view),
    next_cursor: more && last ? encodeCursor({ at: new Date(last.created_at).toISOString(), id: last.id }) : null,
  };
}
