/**
 * The check `integrity verify` makes of a range of chain rows, on its own: each row's event or call
 * record written out as its leaf with the row's own prev_hash, its chain hash and stored leaf hash
 * recomputed, and each row's prev_hash compared with the hash of the row before it in the range.
 * Whether the range's first prev_hash is the hash before the range (the link between two ranges)
 * is the caller's check, in chain order (src/db/repositories/event-chain-verification.ts); a range
 * whose first link holds is accepted up to its first failing row exactly as the chain's walk
 * accepts it row by row. A range of positions is read and checked by whoever holds it: the walk's
 * thread, or a worker thread with a connection of its own (leaf-check-pool.ts), so that neither
 * the rows nor their parsing cross between threads; what comes back is a few values and the leaf
 * hashes (a row's links as text, per row, cost more to copy between threads than to compare).
 */
import { withTransaction, type Db } from '../db/pool';
import { eachRecordLeafSourceOfSeqs, recordLeafHashes, type RecordLeafSource } from '../db/repositories/record-leaf-text';
import { CANONICAL_COLUMNS_SQL, canonicalOfStored } from '../db/repositories/canonical-columns';
import { canonicalFromColumns, type CanonicalColumns } from '../events/canonical';
import { chainAndLeafHash } from './hashes';

/** Chain positions (afterPos, toPos] of a project, or all after afterPos up to `limit` rows. */
export interface ChainRange {
  projectId: string;
  afterPos: number;
  toPos: number | null;
  limit: number;
}

/** What a range's check found: its rows in chain order, summarised. */
export interface CheckedRange {
  /** Rows read. */
  n: number;
  /** The first row's seq, chain position and prev_hash (null without rows). */
  firstSeq: string | null;
  firstPos: number;
  firstPrev: string | null;
  /** The last row's chain position. */
  lastPos: number;
  /** The hash of the last row before the first failing one (null when that is the first). */
  walkedHash: string | null;
  /**
   * Index of the first row whose own check failed or whose prev_hash is not the hash of the row
   * before it (n when none), and its seq.
   */
  failedAt: number;
  failedSeq: string | null;
  /** Index of the first row whose position is not firstPos + its index (n when none). */
  gapAt: number;
  /** Each row's leaf hash, 32 bytes each (those from the failed row on not to be used). */
  leaves: Uint8Array;
}

/**
 * How a range's records are read: by each week's `(project_id, seq)` index, with the plan the
 * connection made the first time (the statement is named). A range's span of seqs is a fair share
 * of a small week's rows, and the planner then scanned the whole week and filtered every row of
 * every project, about a fifth more of PostgreSQL's CPU per record than the index; planning the
 * statement (every week partition of records and permits) for each range cost another tenth.
 */
const RECORDS_READ = 'BEGIN READ ONLY; SET LOCAL enable_seqscan = off; SET LOCAL jit = off; SET LOCAL plan_cache_mode = force_generic_plan';

/** A chain row and its event's canonical columns (all null where no event row answers for it: a call record's position, or a gap). */
type ChainRow = Omit<CanonicalColumns, 'seq'> & { seq: string | null; chain_seq: string; chain_pos: string; prev_hash: string; hash: string; leaf_hash: Buffer | null };

export async function checkChainRange(db: Db, range: ChainRange): Promise<CheckedRange> {
  const { projectId } = range;
  const { rows } = await db.query<ChainRow>({
    name: 'leaf-checks-chain-range',
    text: `SELECT e.seq, ${CANONICAL_COLUMNS_SQL}, c.seq AS chain_seq, c.chain_pos, c.prev_hash, c.hash, c.leaf_hash
       FROM event_chain c LEFT JOIN events e ON e.seq = c.seq
      WHERE c.project_id = $1 AND c.chain_pos > $2 AND ($3::bigint IS NULL OR c.chain_pos <= $3) ORDER BY c.chain_pos LIMIT $4`,
    values: [projectId, range.afterPos, range.toPos, range.limit],
  });
  const n = rows.length;
  const leaves = new Uint8Array(32 * n);
  const ok = new Uint8Array(n);
  // The leaf hash the sequencer stored is what checkpoints sign: it must be this leaf's too.
  const check = (i: number, h: { chain: string; leaf: Buffer }) => {
    const r = rows[i];
    if (r.hash !== h.chain || (r.leaf_hash !== null && !r.leaf_hash.equals(h.leaf))) return;
    ok[i] = 1;
    leaves.set(h.leaf, 32 * i);
  };
  // Positions no event row answers for are call records' (or gaps): checked as their rows arrive.
  const recordAt = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    if (r.seq === null) recordAt.set(Number(r.chain_seq), i);
    else if (r.project_id === projectId) {
      const canonical = canonicalFromColumns(r as CanonicalColumns, r.prev_hash) ?? (await canonicalOfStored(db, r as CanonicalColumns, r.prev_hash));
      check(i, chainAndLeafHash(String(r.prev_hash), canonical));
    }
  }
  if (recordAt.size > 0) {
    const each = (seq: number, source: RecordLeafSource) => {
      const i = recordAt.get(seq);
      if (i !== undefined) check(i, recordLeafHashes(source, String(rows[i].prev_hash)));
    };
    await withTransaction(db, (c) => eachRecordLeafSourceOfSeqs(c, projectId, [...recordAt.keys()], each), RECORDS_READ);
  }
  let failedAt = n;
  for (let i = 0; i < n; i++) {
    if (ok[i] !== 1 || (i > 0 && rows[i].prev_hash !== rows[i - 1].hash)) {
      failedAt = i;
      break;
    }
  }
  const firstPos = n > 0 ? Number(rows[0].chain_pos) : 0;
  let gapAt = n;
  for (let i = 0; i < n; i++) {
    if (Number(rows[i].chain_pos) !== firstPos + i) {
      gapAt = i;
      break;
    }
  }
  return {
    n,
    firstSeq: n > 0 ? String(rows[0].chain_seq) : null,
    firstPos,
    firstPrev: n > 0 ? rows[0].prev_hash : null,
    lastPos: n > 0 ? Number(rows[n - 1].chain_pos) : 0,
    walkedHash: failedAt > 0 ? rows[failedAt - 1].hash : null,
    failedAt,
    failedSeq: failedAt < n ? String(rows[failedAt].chain_seq) : null,
    gapAt,
    leaves,
  };
}
