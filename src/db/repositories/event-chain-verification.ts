/**
 * Verifying a project's hash chain (src/events/canonical.ts) from its stored rows: what
 * `npm run cli -- integrity verify` and the integrity routes report.
 */
import type { Pool } from 'pg';
import { GENESIS_HASH } from '../../events/canonical';
import { appendLeaves } from '../../integrity/merkle';
import { LeafCheckPool, leafCheckWorkers } from '../../integrity/leaf-check-pool';
import { checkLeaves, type ChainLinks, type LeafCheckJob, type LeafCheckResult } from '../../integrity/leaf-checks';
import { chainHead } from './integrity-log';
import { logAnchor } from './archives';
import { chainAllProjectEvents } from './event-chain';
import { queryRaw, readRecordLeafRowsOfSeqs } from './record-leaves';

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

/** Chain rows per read. Reads are keyed on `chain_pos` (the cursor is the last position read). */
const ROWS_PER_READ = 5000;

/**
 * Leaves from which the rows are checked in worker threads (src/integrity/leaf-check-pool.ts):
 * below it, starting the workers costs more than they save.
 */
const WORKERS_FROM = 50_000;

/** A read of the chain after `afterPos`: the rows' links for the walk, and the rows and the records they name for their checks. */
interface ChainBatch {
  links: ChainLinks[];
  job: LeafCheckJob;
}

async function readChainBatch(db: Pool, projectId: string, afterPos: number): Promise<ChainBatch> {
  const chain = await queryRaw(
    db,
    `SELECT e.*, c.seq AS chain_seq, c.chain_pos, c.prev_hash, c.hash, c.leaf_hash
       FROM event_chain c LEFT JOIN events e ON e.seq = c.seq
      WHERE c.project_id = $1 AND c.chain_pos > $2 ORDER BY c.chain_pos LIMIT $3`,
    [projectId, afterPos, ROWS_PER_READ],
  );
  // The last column of each name, as a row object would hold it.
  const at = (name: string) => chain.fields.map((f) => f.name).lastIndexOf(name);
  const [seq, chainSeq, pos, prevHash, hash] = ['seq', 'chain_seq', 'chain_pos', 'prev_hash', 'hash'].map(at);
  const links = chain.rows.map((r) => ({ chain_seq: r[chainSeq]!, chain_pos: r[pos]!, prev_hash: r[prevHash]!, hash: r[hash]! }));
  // Positions no event row answers for are call records' (or gaps).
  const records = await readRecordLeafRowsOfSeqs(db, projectId, chain.rows.filter((r) => r[seq] === null).map((r) => r[chainSeq]!));
  return { links, job: { projectId, chain, records } };
}

/**
 * Brings the project's chain up to date (chains pending events and records), then recomputes it
 * from the genesis hash in `chain_pos` order, each leaf's stored leaf hash with it: an event from
 * its row, a call record from its execution row and permit (`canonicalRecord`). Any edited, removed
 * or reordered row breaks it; so does an event or record with a seq that is neither chained nor
 * waiting to be. With `treeSize`, the walk also builds the tree of that many leaves from the
 * stored leaf hashes it checked (`range_at_size`), so that the checkpoint's root needs no second
 * walk of the chain.
 *
 * Each row's own check (src/integrity/leaf-checks.ts) runs in worker threads for a long chain,
 * `workers` of them (default: every core but one, none below WORKERS_FROM leaves); the reads run
 * ahead of the walk, which checks the links in chain order and stops at the first row that fails.
 */
export async function verifyEventChain(db: Pool, projectId: string, opts: { treeSize?: number; workers?: number } = {}): Promise<ChainVerification> {
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

  const workers = opts.workers ?? ((await chainHead(db, projectId)) - from >= WORKERS_FROM ? leafCheckWorkers() : 0);
  const pool = workers > 0 ? new LeafCheckPool(workers) : null;
  try {
    // Batches read and (with workers) being checked, in chain order; in this thread a batch is
    // checked when the walk reaches it, while the next one is read.
    const ahead: { links: ChainLinks[]; checked: () => Promise<LeafCheckResult> }[] = [];
    const depth = pool ? 2 * workers + 1 : 1;
    let after = from;
    let more = true;
    let reading: Promise<void> | null = null;
    const readOne = async () => {
      const b = await readChainBatch(db, projectId, after);
      if (b.links.length < ROWS_PER_READ) more = false;
      if (b.links.length === 0) return;
      after = Number(b.links[b.links.length - 1].chain_pos);
      const sent = pool?.check(b.job);
      sent?.catch(() => undefined);
      ahead.push({ links: b.links, checked: sent ? () => sent : async () => checkLeaves(b.job) });
    };
    for (;;) {
      if (!reading && more && ahead.length < depth) reading = readOne().finally(() => (reading = null));
      if (ahead.length === 0) {
        if (!reading) break;
        await reading;
        continue;
      }
      const batch = ahead.shift()!;
      const { leaves, ok } = await batch.checked();
      for (let i = 0; i < batch.links.length; i++) {
        const r = batch.links[i];
        if (r.prev_hash !== prev || ok[i] !== 1) return result(false, Number(r.chain_seq));
        prev = r.hash;
        count += 1;
        if (tree && tree.size + pendingLeaves.length < treeSize!) {
          // A position out of place leaves the root to the caller's own walk, which names it.
          if (Number(r.chain_pos) !== tree.size + pendingLeaves.length + 1) tree = null;
          else pendingLeaves.push(Buffer.from(leaves.buffer, leaves.byteOffset + 32 * i, 32));
        }
      }
      growTree();
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
