/**
 * Planning a project's next archive (docs/decisions/retention-and-archives.md): the leaf range it
 * takes, and the chain head and tree range it must verify against, fixed before anything is
 * deleted.
 */
import type { Queryable } from '../db/pool';
import { newId } from '../ids';
import { archiveStoreOf } from '../archive-store/from-config';
import { chainAllProjectEvents } from '../db/repositories/event-chain';
import { chainHead, latestCheckpoint } from '../db/repositories/integrity-log';
import { insertArchive, lastCompletedArchive, type ArchiveRow } from '../db/repositories/archives';
import { complianceSigner } from '../integrity/keys';
import { chainedLeaves, issueCheckpoint } from '../integrity/log';
import { appendLeaves } from '../integrity/merkle';
import { archiveKey } from './archive';
import type { RetentionDeps } from './types';

/**
 * An archive's leaf range ends on a multiple of 16 leaves: the tree's nodes of levels 1–3 are not
 * stored but hashed from their leaves when a proof needs them (src/integrity/log.ts, `treeNodes`),
 * so every such node must lie wholly inside the archived prefix (never needed again: every
 * retained leaf's proof and every later checkpoint uses the stored nodes of level 4 and up there)
 * or wholly after it (its leaves retained).
 */
const ARCHIVE_ALIGNMENT = 16;

/** The time of the project's oldest row that retention archives (before `cutoff`), or null. */
async function oldestRow(db: Queryable, projectId: string, cutoff: Date): Promise<Date | null> {
  const { rows } = await db.query<{ at: Date | null }>(
    `SELECT least((SELECT min(timestamp) FROM events WHERE project_id = $1 AND timestamp < $2),
                  (SELECT min(created_at) FROM calls WHERE project_id = $1 AND created_at < $2),
                  (SELECT min(issued_at) FROM permits WHERE project_id = $1 AND issued_at < $2)) AS at`,
    [projectId, cutoff],
  );
  return rows[0].at ? new Date(rows[0].at) : null;
}

/**
 * Fixes the next archive's range: from the end of the last one to the last position before the
 * first leaf (event or call record) at or after the cutoff, within the latest checkpoint (issued
 * now if the chain grew), rounded down to ARCHIVE_ALIGNMENT. Records the chain's head hash and
 * the tree's compact range there, computed from the chain before anything is deleted.
 */
export async function planArchive(deps: RetentionDeps, projectId: string, cutoff: Date): Promise<ArchiveRow | null> {
  const { db } = deps;
  const base = await lastCompletedArchive(db, projectId);
  // A project's first window starts at its oldest row, not at the epoch: an id made before it (a
  // mistyped or invented one) is not reported as archived.
  const since = base ? new Date(base.window_until) : await oldestRow(db, projectId, cutoff);
  if (!since || since.getTime() >= cutoff.getTime()) return null;
  const from = base ? Number(base.last_index) + 1 : 0; // positions 1..from are archived already
  await chainAllProjectEvents(db, projectId);
  // A leaf whose time cannot be read (no row answers for it) counts as recent: nothing is deleted past it.
  const { rows } = await db.query<{ pos: string | null }>(
    // The first such leaf in chain order (walked by the chain's index from the last archive), not
    // a min() over every later leaf joined to its row.
    `SELECT c.chain_pos AS pos
       FROM event_chain c
       LEFT JOIN events e ON e.seq = c.seq
       LEFT JOIN calls x ON x.project_id = c.project_id AND x.seq = c.seq
      WHERE c.project_id = $1 AND c.chain_pos > $2
        AND coalesce(e.timestamp, x.completed_at, 'infinity'::timestamptz) >= $3
      ORDER BY c.chain_pos
      LIMIT 1`,
    [projectId, from, cutoff],
  );
  let end = rows.length === 0 || rows[0].pos === null ? await chainHead(db, projectId) : Number(rows[0].pos) - 1;
  const signer = await complianceSigner(db, deps.config);
  for (let i = 0; i < 20; i++) {
    const cp = await latestCheckpoint(db, projectId);
    if (cp && Number(cp.tree_size) >= end) break;
    const r = await issueCheckpoint(db, signer, projectId);
    if (!r.issued && r.reason === 'up_to_date') break;
    if (!r.issued) await new Promise((res) => setTimeout(res, 200));
  }
  const cp = await latestCheckpoint(db, projectId);
  if (!cp) return null;
  end = Math.min(end, Number(cp.tree_size));
  end -= end % ARCHIVE_ALIGNMENT;
  if (end <= from) return null;

  let range: Buffer[] = base ? base.compact_range.map((h) => Buffer.from(h, 'base64')) : [];
  let n = from;
  for await (const { leaves } of chainedLeaves(db, projectId, from, end)) {
    const next = appendLeaves(n, range, leaves);
    range = next.range;
    n = next.size;
  }
  const { rows: last } = await db.query<{ seq: string; hash: string }>('SELECT seq, hash FROM event_chain WHERE project_id = $1 AND chain_pos = $2', [projectId, end]);
  const head = last[0] ?? null;
  if (!head) throw new Error(`project ${projectId}: chain position ${end} is missing`);
  const id = newId('arch');
  return insertArchive(db, {
    id,
    project_id: projectId,
    window_since: since,
    window_until: cutoff,
    first_index: from,
    last_index: end - 1,
    last_seq: head.seq,
    head_hash: head.hash,
    compact_range: range.map((h) => h.toString('base64')),
    checkpoint_size: Number(cp.tree_size),
    path: archiveStoreOf(deps.config).locate(archiveKey({ project_id: projectId, id })),
  });
}
