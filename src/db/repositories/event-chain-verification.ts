/**
 * Verifying a project's hash chain (src/events/canonical.ts) from its stored rows: what
 * `npm run cli -- integrity verify` and the integrity routes report.
 */
import type { Pool } from 'pg';
import { GENESIS_HASH } from '../../events/canonical';
import { extendRange } from '../../integrity/merkle';
import { LeafCheckPool, leafCheckWorkers } from '../../integrity/leaf-check-pool';
import { checkChainRange, type ChainRange, type CheckedRange } from '../../integrity/leaf-checks';
import { chainHead } from './integrity-log';
import { logAnchor } from './archives';
import { chainAllProjectEvents } from './event-chain';

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

/** Chain positions per read (`rowsPerRead` sets it for a test of ranges' boundaries). */
const ROWS_PER_READ = 5000;

/**
 * Leaves from which ranges are read and checked in worker threads (src/integrity/leaf-check-pool.ts):
 * below it, starting the workers costs more than they save.
 */
const WORKERS_FROM = 50_000;

/**
 * Brings the project's chain up to date (chains pending events and records), then recomputes it
 * from the genesis hash in `chain_pos` order, each leaf's stored leaf hash with it: an event from
 * its row, a call record from its row and permit (`canonicalRecord`). Any edited, removed
 * or reordered row breaks it; so does an event or record with a seq that is neither chained nor
 * waiting to be. With `treeSize`, the walk also builds the tree of that many leaves from the
 * stored leaf hashes it checked (`range_at_size`), so that the checkpoint's root needs no second
 * walk of the chain.
 *
 * The chain is read in ranges of positions, each range's rows checked on their own
 * (src/integrity/leaf-checks.ts): in worker threads with connections of their own for a long
 * chain, `workers` of them (default: one per core, none below WORKERS_FROM leaves), or in
 * this thread. The walk takes the ranges in order, checks the links and stops at the first row
 * that fails (docs/decisions/integrity-verify-workers.md).
 */
export async function verifyEventChain(
  db: Pool,
  projectId: string,
  opts: { treeSize?: number; workers?: number; rowsPerRead?: number } = {},
): Promise<ChainVerification> {
  const rowsPerRead = opts.rowsPerRead ?? ROWS_PER_READ;
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
    const out = extendRange(tree.size, tree.range, pendingLeaves);
    tree = { size: out.size, range: out.range };
    pendingLeaves.length = 0;
  };
  const result = (ok: boolean, brokenAt: number | null): ChainVerification => {
    growTree();
    const out: ChainVerification = { ok, count, broken_at_seq: brokenAt, head_hash: prev };
    if (treeSize !== undefined) out.range_at_size = ok && tree && tree.size === treeSize ? tree.range : null;
    return out;
  };

  // Ranges of positions up to the head are read side by side; what is chained meanwhile, after.
  const head = await chainHead(db, projectId);
  const databaseUrl = (db as Pool & { options?: { connectionString?: string } }).options?.connectionString;
  const workers = databaseUrl === undefined ? 0 : (opts.workers ?? (head - from >= WORKERS_FROM ? leafCheckWorkers() : 0));
  const pool = workers > 0 ? new LeafCheckPool(workers, databaseUrl!) : null;
  try {
    // Ranges being read and checked, in chain order: by the workers (two per worker), or in this
    // thread two at a time (one range's reads run while the other is checked).
    const ahead: Promise<CheckedRange>[] = [];
    const depth = pool ? 2 * workers : 2;
    let nextFrom = from;
    let tail = false;
    const startRange = () => {
      const range: ChainRange = nextFrom < head
        ? { projectId, afterPos: nextFrom, toPos: Math.min(nextFrom + rowsPerRead, head), limit: rowsPerRead }
        : { projectId, afterPos: nextFrom, toPos: null, limit: rowsPerRead };
      if (range.toPos === null) tail = true;
      else nextFrom = range.toPos;
      const checked = pool && range.toPos !== null ? pool.check(range) : checkChainRange(db, range);
      checked.catch(() => undefined);
      ahead.push(checked);
    };
    let afterPos = from;
    for (;;) {
      while (!tail && ahead.length < depth) startRange();
      if (ahead.length === 0) break;
      const r = await ahead.shift()!;
      if (r.n > 0 && r.firstPrev !== prev) return result(false, Number(r.firstSeq));
      // The rows before the range's first failing one are walked; that one breaks the chain.
      const walked = r.failedAt;
      if (tree && walked > 0 && tree.size + pendingLeaves.length < treeSize!) {
        const take = Math.min(walked, treeSize! - tree.size - pendingLeaves.length);
        // A position out of place leaves the root to the caller's own walk, which names it.
        if (r.firstPos !== tree.size + pendingLeaves.length + 1 || r.gapAt < take) tree = null;
        else for (let i = 0; i < take; i++) pendingLeaves.push(Buffer.from(r.leaves.buffer, r.leaves.byteOffset + 32 * i, 32));
      }
      count += walked;
      if (walked > 0) prev = r.walkedHash!;
      if (walked < r.n) return result(false, Number(r.failedSeq));
      if (r.n > 0) afterPos = r.lastPos;
      growTree();
      // Past the head: read on from the last row until a read comes back short.
      if (tail && ahead.length === 0 && r.n === rowsPerRead) {
        nextFrom = afterPos;
        tail = false;
      }
    }
  } finally {
    await pool?.close();
  }
  // An event or call record neither chained nor waiting to be: its chain row was removed.
  const { rows: orphans } = await db.query<{ seq: string }>(
    `(SELECT e.seq FROM events e
       WHERE e.project_id = $1 AND e.seq > $2
         AND NOT EXISTS (SELECT 1 FROM event_chain c WHERE c.seq = e.seq)
         AND NOT EXISTS (SELECT 1 FROM event_chain_pending p WHERE p.project_id = e.project_id AND e.seq = ANY(p.seqs))
       ORDER BY e.seq LIMIT 1)
     UNION ALL
     (SELECT x.seq FROM calls x
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
