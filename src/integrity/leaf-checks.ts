/**
 * The check `integrity verify` makes of each chain row, on its own: the row's event or call record
 * written out as its leaf with the row's own prev_hash, its chain hash and stored leaf hash
 * recomputed. Whether each row's prev_hash is the hash before it (the link) is the caller's
 * check, in chain order (src/db/repositories/event-chain-verification.ts); a row whose link holds
 * and whose check passes is exactly a row the chain's walk accepts. Rows arrive as text
 * (`RawRows`) so that a batch can be checked in a worker thread (leaf-check-pool.ts).
 */
import { canonicalEvent, canonicalRecord, eventHash } from '../events/canonical';
import type { EventRecord } from '../events/types';
import { parseRows, recordLeavesFromRows, type RawRows } from '../db/repositories/record-leaves';
import { leafHash } from './merkle';

/** A batch of one project's chain rows (with their events' columns) and the records they name. */
export interface LeafCheckJob {
  projectId: string;
  chain: RawRows;
  records: RawRows;
}

/** Per chain row, in order: its leaf hash (32 bytes each) and whether it matched (1) or not (0). */
export interface LeafCheckResult {
  leaves: Uint8Array;
  ok: Uint8Array;
}

/** The columns of a chain row the caller walks: its seq, position and links, as text. */
export interface ChainLinks {
  chain_seq: string;
  chain_pos: string;
  prev_hash: string;
  hash: string;
}

export type ChainRow = Omit<EventRecord, 'seq'> & { seq: number | null; chain_seq: string; chain_pos: string; leaf_hash: Buffer | null };

export function checkLeaves(job: LeafCheckJob): LeafCheckResult {
  const rows = parseRows<ChainRow>(job.chain);
  const records = recordLeavesFromRows(job.records);
  const leaves = new Uint8Array(32 * rows.length);
  const ok = new Uint8Array(rows.length);
  rows.forEach((r, i) => {
    let canonical: string;
    if (r.seq !== null) {
      if (r.project_id !== job.projectId) return;
      canonical = canonicalEvent({ ...r, seq: r.seq, prev_hash: r.prev_hash });
    } else {
      const record = records.get(String(r.chain_seq));
      if (!record) return;
      canonical = canonicalRecord(record, r.prev_hash);
    }
    // The leaf hash the sequencer stored is what checkpoints sign: it must be this leaf's too.
    const leaf = leafHash(canonical);
    leaves.set(leaf, 32 * i);
    if (r.hash === eventHash(r.prev_hash!, canonical) && (r.leaf_hash === null || r.leaf_hash.equals(leaf))) ok[i] = 1;
  });
  return { leaves, ok };
}
