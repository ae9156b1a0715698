/**
 * Planning a project's next archive (docs/decisions/retention-and-archives.md): the leaf range it
 * takes, and the chain head and tree range it must verify against, fixed before anything is
 * deleted.
 */
import type { Db, Queryable } from '../db/pool';
import { newId } from '../ids';
import { archiveStoreOf } from '../archive-store/from-config';
import { chainProjectEvents } from '../db/repositories/event-chain';
import { chainHead, latestCheckpoint } from '../db/repositories/integrity-log';
import { insertArchive, lastCompletedArchive, type ArchiveRow } from '../db/repositories/archives';
import { complianceSigner } from '../integrity/keys';
import { chainedLeaves, issueCheckpoint } from '../integrity/log';
import { appendLeaves } from '../integrity/merkle';
import { archiveKey } from './archive';
import { idInstant } from './archived';
import type { RetentionDeps } from './types';

/**
 * An archive's leaf range ends on a multiple of 16 leaves: the tree's nodes of levels 1–3 are not
 * stored but hashed from their leaves when a proof needs them (src/integrity/log.ts, `treeNodes`),
 * so every such node must lie wholly inside the archived prefix (never needed again: every
 * retained leaf's proof and every later checkpoint uses the stored nodes of level 4 and up there)
 * or wholly after it (its leaves retained).
 */
const ARCHIVE_ALIGNMENT = 16;

/**
 * Where the project's first archive window starts: its oldest row that retention archives (before
 * `cutoff`), or the instant of that row's id where earlier. A call's id is made as it begins, before
 * any of its rows, and a read of an aged-out record is placed in its archive by its id's instant
 * (src/retention/archived.ts): a window starting at the row's time would miss an id made in the
 * millisecond before it. Null when there is no such row.
 */
async function oldestRow(db: Queryable, projectId: string, cutoff: Date): Promise<Date | null> {
  const { rows } = await db.query<{ at: Date | null; call_id: string | null; permit_id: string | null }>(
    `SELECT least((SELECT min(timestamp) FROM events WHERE project_id = $1 AND timestamp < $2),
                  (SELECT min(created_at) FROM calls WHERE project_id = $1 AND created_at < $2),
                  (SELECT min(issued_at) FROM permits WHERE project_id = $1 AND issued_at < $2)) AS at,
            (SELECT id FROM calls WHERE project_id = $1 AND created_at < $2 ORDER BY created_at LIMIT 1) AS call_id,
            (SELECT id FROM permits WHERE project_id = $1 AND issued_at < $2 ORDER BY issued_at LIMIT 1) AS permit_id`,
    [projectId, cutoff],
  );
  const { at, call_id: callId, permit_id: permitId } = rows[0];
  if (!at) return null;
  let since = new Date(at).getTime();
  for (const id of [callId, permitId]) {
    const made = id === null ? null : idInstant(id);
    if (made && made.getTime() < since) since = made.getTime();
  }
  return new Date(since);
}

/**
 * Chain rows read at a time while looking for the archive's end: few at first (an hourly round's
 * archive holds an hour of leaves), twice as many each read after, up to the last.
 */
const WALK_CHUNKS = { first: 256, last: 8192 };

/**
 * Chains the project's pending leaves until none older than the cutoff waits (the archive then
 * reaches every leaf before it), but not the ones after: under traffic there always are some, and
 * chaining until none was left competed with the sequencer for seconds.
 */
async function chainPendingBefore(db: Db, projectId: string, cutoff: Date): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    const { rows } = await db.query(
      `SELECT 1 FROM event_chain_pending q CROSS JOIN LATERAL unnest(q.seqs) AS s(seq)
        WHERE q.project_id = $1
          AND (EXISTS (SELECT 1 FROM events e WHERE e.seq = s.seq AND e.timestamp < $2)
               OR EXISTS (SELECT 1 FROM calls x WHERE x.project_id = $1 AND x.seq = s.seq AND x.completed_at < $2))
        LIMIT 1`,
      [projectId, cutoff],
    );
    if (rows.length === 0) return;
    const { events } = await chainProjectEvents(db, projectId);
    if (events === 0) await new Promise((r) => setTimeout(r, 20)); // another process is chaining this project
  }
}

/**
 * The position of the project's first leaf after `from`, in chain order, whose time (the event's,
 * or the call record's completion) is at or after the cutoff, or whose time cannot be read (no row
 * answers for it: it counts as recent); null when there is none. The chain is read a chunk at a
 * time and each chunk's records by the span of its seqs, one range of each week's `(project_id,
 * seq)` index, not a lookup of every week's index per leaf.
 */
async function firstLeafAtOrAfter(db: Queryable, projectId: string, from: number, cutoff: Date): Promise<number | null> {
  let after = from;
  for (let chunk = WALK_CHUNKS.first; ; chunk = Math.min(2 * chunk, WALK_CHUNKS.last)) {
    const { rows } = await db.query<{ chain_pos: string; seq: string }>(
      'SELECT chain_pos, seq FROM event_chain WHERE project_id = $1 AND chain_pos > $2 ORDER BY chain_pos LIMIT $3',
      [projectId, after, chunk],
    );
    if (rows.length === 0) return null;
    const times = await leafTimes(db, projectId, rows.map((r) => Number(r.seq)));
    for (const r of rows) {
      const at = times.get(Number(r.seq));
      if (at === undefined || at >= cutoff.getTime()) return Number(r.chain_pos);
    }
    after = Number(rows[rows.length - 1].chain_pos);
  }
}

/** The time of each of these leaves (by seq) that a row answers for: the event's timestamp, or the call record's completion. */
async function leafTimes(db: Queryable, projectId: string, seqs: number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  const ev = await db.query<{ seq: string; at: Date }>('SELECT seq, timestamp AS at FROM events WHERE seq = ANY($1::bigint[])', [seqs]);
  for (const r of ev.rows) out.set(Number(r.seq), r.at.getTime());
  const rest = seqs.filter((s) => !out.has(s));
  if (rest.length === 0) return out;
  let lo = rest[0];
  let hi = rest[0];
  for (const s of rest) {
    if (s < lo) lo = s;
    if (s > hi) hi = s;
  }
  const wanted = new Set(rest);
  // The span's range scans, cut short past twice the records wanted (records chained far out of
  // seq order); what they missed is read by key.
  const spanned = await db.query<{ seq: string; at: Date }>(
    'SELECT seq, completed_at AS at FROM calls WHERE project_id = $1 AND seq >= $2 AND seq <= $3 LIMIT $4',
    [projectId, lo, hi, 2 * rest.length],
  );
  for (const r of spanned.rows) if (wanted.has(Number(r.seq))) out.set(Number(r.seq), r.at.getTime());
  const missing = rest.filter((s) => !out.has(s));
  if (missing.length > 0) {
    const byKey = await db.query<{ seq: string; at: Date }>('SELECT seq, completed_at AS at FROM calls WHERE project_id = $1 AND seq = ANY($2::bigint[])', [projectId, missing]);
    for (const r of byKey.rows) out.set(Number(r.seq), r.at.getTime());
  }
  return out;
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
  await chainPendingBefore(db, projectId, cutoff);
  const first = await firstLeafAtOrAfter(db, projectId, from, cutoff);
  let end = first === null ? await chainHead(db, projectId) : first - 1;
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
