/**
 * A read of a record retention has deleted answers `404 archived` naming the archive, not a bare
 * `not_found`. Ids are kind-prefixed UUIDv7s (src/ids.ts) whose first 48 bits are the instant the id
 * was made, the instant its call began: an id not found whose instant falls in one of the project's
 * archived windows was aged out into that archive. An id that is no UUIDv7 (a caller's own request
 * id) cannot be placed and stays `not_found`.
 */
import type { Queryable } from '../db/pool';
import { archiveHolding } from '../db/repositories/archives';
import { ApiError, errors } from '../errors';

/** The instant a UUIDv7-based id was made, or null for an id of another shape. */
export function idInstant(id: string): Date | null {
  const m = /(?:^|_)([0-9a-f]{32})$/.exec(id);
  if (!m || m[1][12] !== '7') return null;
  return new Date(parseInt(m[1].slice(0, 12), 16));
}

/** What was not found: its kind (`Permit`, `Call`...), its id, and the id whose instant places it when another one does (a derived event's record). */
export interface Missing {
  what: string;
  id: string;
  timeId?: string;
}

/** `404 archived` with the archive's id when `id` falls in an archived window of the project, else `404 not_found`. */
export async function notFoundOrArchived(db: Queryable, projectId: string, missing: Missing): Promise<ApiError> {
  const { what, id } = missing;
  const at = idInstant(missing.timeId ?? id);
  const archive = at ? await archiveHolding(db, projectId, at) : null;
  if (!archive) return errors.notFound(what, id);
  const window = { since: new Date(archive.window_since).toISOString(), until: new Date(archive.window_until).toISOString() };
  return new ApiError(404, 'archived', `${what} ${id} is older than the project's retention: it was archived and deleted`, { details: { id, archive_id: archive.id, window } });
}

/** Runs `read`; a `not_found` it throws for `id` becomes `archived` when the id was aged out. */
export async function orArchived<T>(db: Queryable, projectId: string, missing: Missing, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof ApiError && err.status === 404 && err.code === 'not_found') throw await notFoundOrArchived(db, projectId, missing);
    throw err;
  }
}
