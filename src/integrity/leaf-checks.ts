/**
 * The check `integrity verify` makes of each chain row, on its own: the row's event or call record
 * written out as its leaf with the row's own prev_hash, its chain hash and stored leaf hash
 * recomputed. Whether each row's prev_hash is the hash before it (the link) is the caller's
 * check, in chain order (src/db/repositories/event-chain-verification.ts); a row whose link holds
 * and whose check passes is exactly a row the chain's walk accepts. A range of positions is read
 * and checked by whoever holds it: the walk's thread, or a worker thread with a connection of its
 * own (leaf-check-pool.ts), so that neither the rows nor their parsing cross between threads.
 */
import type { Queryable } from '../db/pool';
import { readRecordLeafSourcesOfSeqs, recordLeafCanonical } from '../db/repositories/record-leaf-text';
import { canonicalEvent } from '../events/canonical';
import type { EventRecord } from '../events/types';
import { chainAndLeafHash } from './merkle';

/** Chain positions (afterPos, toPos] of a project, or all after afterPos up to `limit` rows. */
export interface ChainRange {
  projectId: string;
  afterPos: number;
  toPos: number | null;
  limit: number;
}

/** The rows of a range in chain order: their links as text, and per row its leaf hash (32 bytes each) and whether its check passed (1). */
export interface CheckedRange {
  seqs: string[];
  positions: string[];
  prevHashes: string[];
  hashes: string[];
  leaves: Uint8Array;
  ok: Uint8Array;
}

type ChainRow = Omit<EventRecord, 'seq'> & { seq: number | null; chain_seq: string; chain_pos: string; leaf_hash: Buffer | null };

export async function checkChainRange(db: Queryable, range: ChainRange): Promise<CheckedRange> {
  const { projectId } = range;
  const { rows } = await db.query<ChainRow>(
    `SELECT e.*, c.seq AS chain_seq, c.chain_pos, c.prev_hash, c.hash, c.leaf_hash
       FROM event_chain c LEFT JOIN events e ON e.seq = c.seq
      WHERE c.project_id = $1 AND c.chain_pos > $2 AND ($3::bigint IS NULL OR c.chain_pos <= $3) ORDER BY c.chain_pos LIMIT $4`,
    [projectId, range.afterPos, range.toPos, range.limit],
  );
  // Positions no event row answers for are call records' (or gaps).
  const records = await readRecordLeafSourcesOfSeqs(db, projectId, rows.filter((r) => r.seq === null).map((r) => r.chain_seq));
  const leaves = new Uint8Array(32 * rows.length);
  const ok = new Uint8Array(rows.length);
  rows.forEach((r, i) => {
    let canonical: string;
    if (r.seq !== null) {
      if (r.project_id !== projectId) return;
      canonical = canonicalEvent({ ...r, seq: r.seq, prev_hash: r.prev_hash });
    } else {
      const record = records.get(String(r.chain_seq));
      if (!record) return;
      canonical = recordLeafCanonical(record, r.prev_hash);
    }
    // The leaf hash the sequencer stored is what checkpoints sign: it must be this leaf's too.
    const h = chainAndLeafHash(String(r.prev_hash), canonical);
    leaves.set(h.leaf, 32 * i);
    if (r.hash === h.chain && (r.leaf_hash === null || r.leaf_hash.equals(h.leaf))) ok[i] = 1;
  });
  return {
    seqs: rows.map((r) => String(r.chain_seq)),
    positions: rows.map((r) => String(r.chain_pos)),
    prevHashes: rows.map((r) => r.prev_hash!),
    hashes: rows.map((r) => r.hash!),
    leaves,
    ok,
  };
}
