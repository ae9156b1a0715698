/**
 * Verifying a project's hash chain (src/events/canonical.ts) from its stored rows: what
 * `npm run cli -- integrity verify` and the integrity routes report.
 */
import type { Pool } from 'pg';
import { canonicalEvent, canonicalRecord, eventHash, GENESIS_HASH } from '../../events/canonical';
import type { EventRecord } from '../../events/types';
import { leafHash } from '../../integrity/merkle';
import { logAnchor } from './archives';
import { chainAllProjectEvents } from './event-chain';
import { readRecordLeaves } from './record-leaves';

export interface ChainVerification {
  ok: boolean;
  count: number;
  /** seq of the first event or call record whose prev_hash, hash or leaf hash does not verify. */
  broken_at_seq: number | null;
  head_hash: string;
}

/**
 * Brings the project's chain up to date (chains pending events and records), then recomputes it
 * from the genesis hash in `chain_pos` order, each leaf's stored leaf hash with it: an event from
 * its row, a call record from its execution row and permit (`canonicalRecord`). Any edited, removed
 * or reordered row breaks it; so does an event or record with a seq that is neither chained nor
 * waiting to be.
 */
export async function verifyEventChain(db: Pool, projectId: string): Promise<ChainVerification> {
  await chainAllProjectEvents(db, projectId);
  // Records archived by retention are verified by their archive: the chain continues from its head.
  const anchor = await logAnchor(db, projectId);
  let prev = anchor?.headHash ?? GENESIS_HASH;
  let count = 0;
  let afterPos = anchor?.position ?? 0;
  const archivedSeq = anchor?.lastSeq ?? '-1';
  for (;;) {
    // From the chain's side, so an event row deleted after chaining is a gap (e.seq IS NULL).
    const { rows } = await db.query<Omit<EventRecord, 'seq'> & { seq: number | null; chain_seq: string; chain_pos: number; leaf_hash: Buffer | null }>(
      `SELECT e.*, c.seq AS chain_seq, c.chain_pos, c.prev_hash, c.hash, c.leaf_hash
         FROM event_chain c LEFT JOIN events e ON e.seq = c.seq
        WHERE c.project_id = $1 AND c.chain_pos > $2 ORDER BY c.chain_pos LIMIT 1000`,
      [projectId, afterPos],
    );
    if (rows.length === 0) break;
    // Positions no event row answers for are call records' (or gaps): their rows in one statement.
    const notEvents = rows.filter((r) => r.seq === null).map((r) => r.chain_seq);
    const records = new Map((await readRecordLeaves(db, notEvents.map(() => projectId), notEvents)).map((r) => [r.seq, r]));
    for (const r of rows) {
      const broken = { ok: false, count, broken_at_seq: Number(r.chain_seq), head_hash: prev };
      let canonical: string;
      if (r.seq !== null) {
        if (r.project_id !== projectId) return broken;
        canonical = canonicalEvent({ ...r, seq: r.seq, prev_hash: prev });
      } else {
        const record = records.get(String(r.chain_seq));
        if (!record) return broken;
        canonical = canonicalRecord(record, prev);
      }
      // The leaf hash the sequencer stored is what checkpoints sign: it must be this leaf's too.
      if (r.prev_hash !== prev || r.hash !== eventHash(prev, canonical) || (r.leaf_hash !== null && !r.leaf_hash.equals(leafHash(canonical)))) return broken;
      prev = r.hash;
      count += 1;
      afterPos = Number(r.chain_pos);
    }
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
  if (orphans.length > 0) return { ok: false, count, broken_at_seq: Number(orphans[0].seq), head_hash: prev };
  return { ok: true, count, broken_at_seq: null, head_hash: prev };
}
