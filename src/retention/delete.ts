/** Deleting an archive's rows once its object has verified (src/retention/archive.ts). */
import type { Db } from '../db/pool';
import { withTransaction } from '../db/pool';
import { deleteRollupBefore, moveRollupStart } from '../db/repositories/call-rollup';
import { addArchiveDeleted, type ArchiveRow } from '../db/repositories/archives';
import type { RetentionOptions } from './types';

const DEFAULT_BATCH = 1000;

/**
 * Deletes the archived rows, a short transaction per batch: the leaves of the archived range (the
 * event or call record and its chain row together, in chain order, so the retained log never has a
 * chain row without its record), then the rows older than the cutoff that are no leaf (call
 * records without a place in the log, permits no retained record or event names, their usage
 * reports, evidence and attestations, idempotency keys). Checkpoints and the tree's stored nodes
 * above the leaves stay: every archive keeps verifying against them.
 */
export async function deleteArchived(db: Db, a: ArchiveRow, opts: RetentionOptions): Promise<void> {
  const batch = opts.batchSize ?? DEFAULT_BATCH;
  const project = a.project_id;
  const end = Number(a.last_index) + 1;
  const cutoff = new Date(a.window_until);
  const step = async () => opts.onStep?.('batch', a.id);
  // Runs `once_` (one batch of `table`'s rows) until it deletes nothing, counting what it deleted.
  const drain = async (table: string, once_: () => Promise<{ rowCount: number | null }>): Promise<void> => {
    for (;;) {
      const r = await once_();
      const n = r.rowCount ?? 0;
      await addArchiveDeleted(db, a.id, table, n);
      if (n === 0) return;
      await step();
    }
  };

  for (;;) {
    const n = await withTransaction(db, async (c) => {
      const { rows } = await c.query<{ seq: string }>('SELECT seq FROM event_chain WHERE project_id = $1 AND chain_pos <= $2 ORDER BY chain_pos LIMIT $3', [project, end, batch]);
      if (rows.length === 0) return 0;
      const seqs = rows.map((r) => r.seq);
      const ev = await c.query('DELETE FROM events WHERE project_id = $1 AND seq = ANY($2::bigint[])', [project, seqs]);
      const ex = await c.query('DELETE FROM executions WHERE project_id = $1 AND seq = ANY($2::bigint[])', [project, seqs]);
      const ch = await c.query('DELETE FROM event_chain WHERE project_id = $1 AND seq = ANY($2::bigint[])', [project, seqs]);
      await addArchiveDeleted(c, a.id, 'events', ev.rowCount ?? 0);
      await addArchiveDeleted(c, a.id, 'executions', ex.rowCount ?? 0);
      await addArchiveDeleted(c, a.id, 'event_chain', ch.rowCount ?? 0);
      return rows.length;
    });
    if (n === 0) break;
    await step();
  }
  // Leaves written out into merkle_nodes (rows chained before leaf hashes were stored) go with their rows.
  await drain('merkle_nodes', () =>
    db.query(
      `DELETE FROM merkle_nodes WHERE ctid = ANY(ARRAY(SELECT ctid FROM merkle_nodes WHERE project_id = $1 AND level = 0 AND idx < $2 LIMIT $3))`,
      [project, end, batch],
    ),
  );
  await drain('executions', () =>
    db.query(
      `DELETE FROM executions WHERE id = ANY(ARRAY(SELECT id FROM executions WHERE project_id = $1 AND seq IS NULL AND created_at < $2 LIMIT $3))`,
      [project, cutoff, batch],
    ),
  );
  // The Overview reads the time before the cutoff from the records that remain, not the rollup.
  await moveRollupStart(db, project, cutoff);
  await drain('call_rollup', () => deleteRollupBefore(db, project, cutoff, batch));
  // A permit stays while a retained record or event names it (a record's leaf holds its permit's
  // decision fields) or a retained permit descends from it.
  await drain('permits', () =>
    withTransaction(db, async (c) => {
      const { rows } = await c.query<{ id: string }>(
        `SELECT p.id FROM permits p
          WHERE p.project_id = $1 AND p.issued_at < $2
            AND NOT EXISTS (SELECT 1 FROM executions x WHERE x.project_id = p.project_id AND x.permit_id = p.id)
            AND NOT EXISTS (SELECT 1 FROM events e WHERE e.project_id = p.project_id AND e.permit_id = p.id)
            AND NOT EXISTS (SELECT 1 FROM permits k WHERE k.parent_permit_id = p.id AND k.issued_at >= $2)
          ORDER BY p.issued_at LIMIT $3`,
        [project, cutoff, batch],
      );
      if (rows.length === 0) return { rowCount: 0 };
      const ids = rows.map((r) => r.id);
      await c.query('DELETE FROM permit_usage_reports WHERE permit_id = ANY($1::text[])', [ids]);
      await c.query('DELETE FROM permit_evidence WHERE permit_id = ANY($1::text[])', [ids]);
      await c.query('DELETE FROM permit_attestations WHERE permit_id = ANY($1::text[]) OR child_permit_id = ANY($1::text[])', [ids]);
      // A child whose parent is in this batch goes first; a parent a later child still names waits for a later batch.
      return c.query(
        `DELETE FROM permits p WHERE p.id = ANY($1::text[])
           AND NOT EXISTS (SELECT 1 FROM permits k WHERE k.parent_permit_id = p.id AND NOT (k.id = ANY($1::text[])))`,
        [ids],
      );
    }),
  );
  await drain('idempotency_keys', () =>
    db.query(
      `DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(SELECT ctid FROM idempotency_keys WHERE project_id = $1 AND created_at < $2 LIMIT $3))`,
      [project, cutoff, batch],
    ),
  );
}
