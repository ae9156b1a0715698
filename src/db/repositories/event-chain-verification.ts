/**
 * Verifying a project's hash chain (src/events/canonical.ts) from its stored rows: what
 * `npm run cli -- integrity verify` and the integrity routes report.
 */
import type { Pool } from 'pg';
import { canonicalEvent, canonicalRecord, eventHash, GENESIS_HASH } from '../../events/canonical';
import type { EventRecord } from '../../events/types';
import { appendLeaves, leafHash } from '../../integrity/merkle';
import { logAnchor } from './archives';
import { chainAllProjectEvents } from './event-chain';
import { readRecordLeavesOfSeqs, type StoredRecordLeaf } from './record-leaves';

export interface ChainVerification {
  ok: boolean;
  count: number;
  /** seq of the first event or call record whose prev_hash, hash or leaf hash does not verify. */
  broken_at_seq: number | null;
  head_hash: string;
  /**
   * With `treeSize`: the compact range of the tree of the chain's first `treeSize` leaves, built
   * from the stored leaf hashes as the walk passed them, each one checked against its row; null
   * when the walk did not reach `treeSize` with every position in place (the caller recomputes it).
   */
  range_at_size?: Buffer[] | null;
}

/**
 * Chain rows per read. Reads are keyed on `chain_pos` (the cursor is the last position read), and
 * the next read runs while this one's leaves are hashed.
 */
const ROWS_PER_READ = 5000;

type ChainRow = Omit<EventRecord, 'seq'> & { seq: number | null; chain_seq: string; chain_pos: string; leaf_hash: Buffer | null };

interface ChainBatch {
  rows: ChainRow[];
  records: Map<string, StoredRecordLeaf>;
}

/**
 * A read of the chain after `afterPos` and the leaves it names: events from their rows (the
 * remaining events table is joined by its key), call records by the span of their seqs
 * (`readRecordLeavesOfSeqs`).
 */
async function readChainBatch(db: Pool, projectId: string, afterPos: number): Promise<ChainBatch> {
  const { rows } = await db.query<ChainRow>(
    `SELECT e.*, c.seq AS chain_seq, c.chain_pos, c.prev_hash, c.hash, c.leaf_hash
       FROM event_chain c LEFT JOIN events e ON e.seq = c.seq
      WHERE c.project_id = $1 AND c.chain_pos > $2 ORDER BY c.chain_pos LIMIT $3`,
    [projectId, afterPos, ROWS_PER_READ],
  );
  const records = await readRecordLeavesOfSeqs(db, projectId, rows.filter((r) => r.seq === null).map((r) => r.chain_seq));
  return { rows, records };
}

/**
 * Brings the project's chain up to date (chains pending events and records), then recomputes it
 * from the genesis hash in `chain_pos` order, each leaf's stored leaf hash with it: an event from
 * its row, a call record from its execution row and permit (`canonicalRecord`). Any edited, removed
 * or reordered row breaks it; so does an event or record with a seq that is neither chained nor
 * waiting to be. With `treeSize`, the walk also builds the tree of that many leaves from the
 * stored leaf hashes it checked (`range_at_size`), so that the checkpoint's root needs no second
 * walk of the chain.
 */
export async function verifyEventChain(db: Pool, projectId: string, opts: { treeSize?: number } = {}): Promise<ChainVerification> {
  await chainAllProjectEvents(db, projectId);
  // Records archived by retention are verified by their archive: the chain continues from its head.
  const anchor = await logAnchor(db, projectId);
  let prev = anchor?.headHash ?? GENESIS_HASH;
  let count = 0;
  const from = anchor?.position ?? 0;
  const archivedSeq = anchor?.lastSeq ?? '-1';
  // The tree of the leaves walked so far, from the archived prefix's compact range.
  const treeSize = opts.treeSize;
  let tree: { size: number; range: Buffer[] } | null = treeSize !== undefined && from <= treeSize ? { size: from, range: anchor?.range ?? [] } : null;
  const pendingLeaves: Buffer[] = [];
  const growTree = () => {
    if (!tree || pendingLeaves.length === 0) return;
    const out = appendLeaves(tree.size, tree.range, pendingLeaves);
    tree = { size: out.size, range: out.range };
    pendingLeaves.length = 0;
  };
  const result = (ok: boolean, brokenAt: number | null): ChainVerification => {
    growTree();
    const out: ChainVerification = { ok, count, broken_at_seq: brokenAt, head_hash: prev };
    if (treeSize !== undefined) out.range_at_size = ok && tree && tree.size === treeSize ? tree.range : null;
    return out;
  };

  let next: Promise<ChainBatch> | null = readChainBatch(db, projectId, from);
  while (next) {
    const { rows, records }: ChainBatch = await next;
    if (rows.length === 0) break;
    // The next read runs while this one is hashed; a walk that stops early leaves it unread.
    next = rows.length === ROWS_PER_READ ? readChainBatch(db, projectId, Number(rows[rows.length - 1].chain_pos)) : null;
    next?.catch(() => undefined);
    for (const r of rows) {
      let canonical: string;
      if (r.seq !== null) {
        if (r.project_id !== projectId) return result(false, Number(r.chain_seq));
        canonical = canonicalEvent({ ...r, seq: r.seq, prev_hash: prev });
      } else {
        const record = records.get(String(r.chain_seq));
        if (!record) return result(false, Number(r.chain_seq));
        canonical = canonicalRecord(record, prev);
      }
      // The leaf hash the sequencer stored is what checkpoints sign: it must be this leaf's too.
      const leaf = leafHash(canonical);
      if (r.prev_hash !== prev || r.hash !== eventHash(prev, canonical) || (r.leaf_hash !== null && !r.leaf_hash.equals(leaf))) return result(false, Number(r.chain_seq));
      prev = r.hash;
      count += 1;
      const pos = Number(r.chain_pos);
      if (tree && tree.size + pendingLeaves.length < treeSize!) {
        // A position out of place leaves the root to the caller's own walk, which names it.
        if (pos !== tree.size + pendingLeaves.length + 1) tree = null;
        else pendingLeaves.push(leaf);
      }
    }
    growTree();
  }
  // An event or call record neither chained nor waiting to be: its chain row was removed.
  const { rows: orphans } = await db.query<{ seq: string }>(
    `(SELECT e.seq FROM events e
       WHERE e.project_id = $1 AND e.seq > $2
         AND NOT EXISTS (SELECT 1 FROM event_chain c WHERE c.seq = e.seq)
         AND NOT EXISTS (SELECT 1 FROM event_chain_pending p WHERE p.project_id = e.project_id AND e.seq = ANY(p.seqs))
       ORDER BY e.seq LIMIT 1)
     UNION ALL
     (SELECT x.seq FROM executions x
       WHERE x.project_id = $1 AND x.seq > $2
         AND NOT EXISTS (SELECT 1 FROM event_chain c WHERE c.seq = x.seq)
         AND NOT EXISTS (SELECT 1 FROM event_chain_pending p WHERE p.project_id = x.project_id AND x.seq = ANY(p.seqs))
       ORDER BY x.seq LIMIT 1)
     ORDER BY seq LIMIT 1`,
    [projectId, archivedSeq],
  );
  if (orphans.length > 0) return result(false, Number(orphans[0].seq));
  return result(true, null);
}
