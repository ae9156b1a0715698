/** Sealed archives of aged-out records (migration 0180; src/retention/run.ts writes them). */
import type { Queryable } from '../pool';

export type ArchiveStatus = 'building' | 'verified' | 'completed';

export interface ArchiveRow {
  id: string;
  project_id: string;
  status: ArchiveStatus;
  window_since: Date;
  window_until: Date;
  first_index: string;
  last_index: string;
  last_seq: string;
  head_hash: string;
  compact_range: string[];
  checkpoint_size: string;
  path: string;
  sha256: string | null;
  bytes: string | null;
  deleted: Record<string, number>;
  created_at: Date;
  verified_at: Date | null;
  completed_at: Date | null;
}

export async function insertArchive(
  db: Queryable,
  a: Pick<ArchiveRow, 'id' | 'project_id' | 'window_since' | 'window_until' | 'head_hash' | 'compact_range' | 'path'> & { first_index: number; last_index: number; last_seq: string; checkpoint_size: number },
): Promise<ArchiveRow> {
  const { rows } = await db.query<ArchiveRow>(
    `INSERT INTO archives (id, project_id, status, window_since, window_until, first_index, last_index, last_seq, head_hash, compact_range, checkpoint_size, path)
     VALUES ($1, $2, 'building', $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
    [a.id, a.project_id, a.window_since, a.window_until, a.first_index, a.last_index, a.last_seq, a.head_hash, JSON.stringify(a.compact_range), a.checkpoint_size, a.path],
  );
  return rows[0];
}

/** The project's unfinished archive (building or verified), if any: a run resumes it. */
export async function openArchive(db: Queryable, projectId: string): Promise<ArchiveRow | null> {
  const { rows } = await db.query<ArchiveRow>(`SELECT * FROM archives WHERE project_id = $1 AND status <> 'completed'`, [projectId]);
  return rows[0] ?? null;
}

/** The project's latest completed archive: the next one's range and window start where it ends. */
export async function lastCompletedArchive(db: Queryable, projectId: string): Promise<ArchiveRow | null> {
  const { rows } = await db.query<ArchiveRow>(`SELECT * FROM archives WHERE project_id = $1 AND status = 'completed' ORDER BY last_index DESC LIMIT 1`, [projectId]);
  return rows[0] ?? null;
}

/**
 * Where the retained log starts: the latest archive that verified (its rows may be deleted, or
 * being deleted). Positions up to `position` are vouched for by the archive; the chain continues
 * from `head_hash`, and the tree's first `position` leaves are `compact_range`.
 */
export async function logAnchor(db: Queryable, projectId: string): Promise<{ archiveId: string; position: number; headHash: string; range: Buffer[]; lastSeq: string } | null> {
  const { rows } = await db.query<ArchiveRow>(
    `SELECT * FROM archives WHERE project_id = $1 AND status IN ('verified', 'completed') ORDER BY last_index DESC LIMIT 1`,
    [projectId],
  );
  const a = rows[0];
  if (!a) return null;
  return { archiveId: a.id, position: Number(a.last_index) + 1, headHash: a.head_hash, range: a.compact_range.map((h) => Buffer.from(h, 'base64')), lastSeq: a.last_seq };
}

/** The archive whose window holds `at` (rows of a verified archive may already be gone). */
export async function archiveHolding(db: Queryable, projectId: string, at: Date): Promise<ArchiveRow | null> {
  const { rows } = await db.query<ArchiveRow>(
    `SELECT * FROM archives WHERE project_id = $1 AND status IN ('verified', 'completed') AND window_since <= $2 AND window_until > $2
      ORDER BY window_until LIMIT 1`,
    [projectId, at],
  );
  return rows[0] ?? null;
}

export async function markArchiveVerified(db: Queryable, id: string, sha256: string, bytes: number): Promise<void> {
  await db.query(`UPDATE archives SET status = 'verified', sha256 = $2, bytes = $3, verified_at = now() WHERE id = $1 AND status = 'building'`, [id, sha256, bytes]);
}

/** Adds rows deleted to the archive's count per table, in one statement (tables with none left out). */
export async function addArchiveDeleted(db: Queryable, id: string, counts: Record<string, number>): Promise<void> {
  const tables = Object.keys(counts).filter((t) => counts[t] > 0);
  if (tables.length === 0) return;
  await db.query(
    `UPDATE archives SET deleted = deleted || (SELECT jsonb_object_agg(t, coalesce((deleted->>t)::bigint, 0) + n) FROM unnest($2::text[], $3::bigint[]) AS d(t, n))
      WHERE id = $1`,
    [id, tables, tables.map((t) => counts[t])],
  );
}

export async function markArchiveCompleted(db: Queryable, id: string): Promise<ArchiveRow | null> {
  const { rows } = await db.query<ArchiveRow>(`UPDATE archives SET status = 'completed', completed_at = now() WHERE id = $1 RETURNING *`, [id]);
  return rows[0] ?? null;
}

export async function listArchives(db: Queryable, projectId: string): Promise<ArchiveRow[]> {
  const { rows } = await db.query<ArchiveRow>('SELECT * FROM archives WHERE project_id = $1 ORDER BY last_index', [projectId]);
  return rows;
}
