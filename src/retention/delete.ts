/** Deleting an archive's rows once its object has verified (src/retention/archive.ts). */
import type { Db, Queryable } from '../db/pool';
import { withTransaction } from '../db/pool';
import { idBound } from '../db/partitions';
import { deleteRollupBefore, moveRollupStart } from '../db/repositories/call-rollup';
import { deleteGovernanceRollupBefore, moveGovernanceRollupStart } from '../db/repositories/governance-rollup';
import { deleteUsageRollupBefore, moveUsageRollupStart } from '../db/repositories/usage-rollup';
import { addArchiveDeleted, type ArchiveRow } from '../db/repositories/archives';
import type { Pace } from './pace';
import type { RetentionOptions } from './types';

const DEFAULT_BATCH = 1000;
/**
 * With the records left to their week's drop, a batch of leaves deletes only chain rows (and any
 * events): this many times the batch, the per-batch statements and commit being most of its cost.
 */
const DEFERRED_LEAVES_FACTOR = 5;

/**
 * Rows of the week partitions that begin before `before` are left to the partitions' drop
 * (src/retention/partitions.ts) rather than deleted one by one: those weeks are dropped whole
 * within a week, once every record they hold is archived. Rows of those weeks' ids in a DEFAULT
 * partition, which is never dropped, are deleted.
 */
export interface Deferral {
  before: Date;
  /** Whether permits are deferred too (else only call records). */
  permits: boolean;
}

/**
 * Where a sweep of the table's rows looks: the whole table, or the weeks not deferred (an id range,
 * which prunes the deferred weeks' partitions) and the DEFAULT partition's ids of deferred weeks.
 * `where(n)` is the condition with its bound as parameter $n; `bound` that parameter (none: no condition).
 */
interface Scope {
  from: string;
  where: (n: number) => string;
  bound: string[];
}

function scopes(table: 'calls' | 'permits', prefix: string, deferral: Deferral | null): Scope[] {
  if (!deferral) return [{ from: table, where: () => 'true', bound: [] }];
  const bound = idBound(prefix, deferral.before);
  return [
    { from: table, where: (n) => `id >= $${n}`, bound: [bound] },
    { from: `${table}_default`, where: (n) => `id < $${n}`, bound: [bound] },
  ];
}

/**
 * Deletes the archived rows, a short transaction per batch, every statement bounded by the
 * archive's window and served by an index: the leaves of the archived range (the event or call
 * record and its chain row together, in chain order, so the retained log never has a chain row
 * without its record), then the rows older than the cutoff that are no leaf (call records without
 * a place in the log, permits no retained record or event names, their usage reports, evidence
 * and attestations, idempotency keys). Checkpoints and the tree's stored nodes above the leaves
 * stay: every archive keeps verifying against them. With a deferral, records and permits of the
 * deferred weeks stay for their partitions' drop; with a pace, each batch is followed by its step.
 */
export async function deleteArchived(db: Db, a: ArchiveRow, opts: RetentionOptions, o: { deferral: Deferral | null; pace?: Pace }): Promise<void> {
  const { deferral, pace } = o;
  const batch = opts.batchSize ?? DEFAULT_BATCH;
  const project = a.project_id;
  const cutoff = new Date(a.window_until);
  const step = async () => {
    await opts.onStep?.('batch', a.id);
    await pace?.step();
  };
  // Runs `once_` (one batch of `table`'s rows) until it deletes nothing, counting what it deleted.
  const drain = async (table: string, once_: () => Promise<number>): Promise<void> => {
    for (;;) {
      const n = await once_();
      await addArchiveDeleted(db, a.id, { [table]: n });
      if (n === 0) return;
      await step();
    }
  };

  await deleteLeaves(db, a, { batch: deferral ? batch * DEFERRED_LEAVES_FACTOR : batch, deferral, step });
  // Leaves written out into merkle_nodes (rows chained before leaf hashes were stored) go with their rows.
  await drain('merkle_nodes', async () => {
    const r = await db.query(
      `DELETE FROM merkle_nodes WHERE project_id = $1 AND level = 0 AND idx IN (SELECT idx FROM merkle_nodes WHERE project_id = $1 AND level = 0 AND idx < $2 ORDER BY idx LIMIT $3)`,
      [project, Number(a.last_index) + 1, batch],
    );
    return r.rowCount ?? 0;
  });
  for (const scope of scopes('calls', 'exec_req_', deferral)) {
    // `executions`: the archive's `deleted` key for call records, a field of the archives API.
    await drain('executions', async () => {
      // By the project's time index: what is left before the cutoff is no leaf (the archived
      // leaves went above) or a leaf the archive did not reach.
      const { rows } = await db.query<{ id: string }>(
        `SELECT id FROM ${scope.from} WHERE project_id = $1 AND created_at < $2 AND seq IS NULL AND ${scope.where(4)} LIMIT $3`,
        [project, cutoff, batch, ...scope.bound],
      );
      if (rows.length === 0) return 0;
      // By id: the statement prunes to the records' weeks.
      const r = await db.query('DELETE FROM calls WHERE id = ANY($1::text[])', [rows.map((x) => x.id)]);
      return r.rowCount ?? 0;
    });
  }
  // The Overview reads the time before the cutoff from the records that remain, not the rollup.
  await moveRollupStart(db, project, cutoff);
  await drain('call_rollup', async () => (await deleteRollupBefore(db, project, cutoff, batch)).rowCount ?? 0);
  // The Governance page likewise, from the permits that remain.
  await moveGovernanceRollupStart(db, project, cutoff);
  await drain('governance_rollup', async () => (await deleteGovernanceRollupBefore(db, project, cutoff, batch)).rowCount ?? 0);
  // The Spend page's usage likewise.
  await moveUsageRollupStart(db, project, cutoff);
  await drain('usage_rollup', async () => (await deleteUsageRollupBefore(db, project, cutoff, batch)).rowCount ?? 0);
  for (const scope of scopes('permits', 'permit_', deferral?.permits ? deferral : null)) await deletePermits(db, a, { batch, scope, step });
  await drain('idempotency_keys', async () => {
    const r = await db.query(
      `DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(SELECT ctid FROM idempotency_keys WHERE project_id = $1 AND created_at < $2 LIMIT $3))`,
      [project, cutoff, batch],
    );
    return r.rowCount ?? 0;
  });
}

/**
 * The archived range's leaves in chain order: a batch of chain rows, their events, their call
 * records (found by the span of the batch's seqs, one range scan of each week's `(project_id, seq)`
 * index, and deleted by id, which prunes to their weeks), and the chain rows. A record of a
 * deferred week stays for the week's drop, unless its seq is past the archive's last one (a
 * record chained out of seq order), which the partition's check would not count as archived.
 */
async function deleteLeaves(db: Db, a: ArchiveRow, o: { batch: number; deferral: Deferral | null; step: () => Promise<void> }): Promise<void> {
  const project = a.project_id;
  const end = Number(a.last_index) + 1;
  const lastSeq = Number(a.last_seq);
  const bound = o.deferral ? idBound('exec_req_', o.deferral.before) : null;
  for (;;) {
    const n = await withTransaction(db, async (c) => {
      const { rows } = await c.query<{ seq: string; chain_pos: string }>(
        'SELECT seq, chain_pos FROM event_chain WHERE project_id = $1 AND chain_pos <= $2 ORDER BY chain_pos LIMIT $3',
        [project, end, o.batch],
      );
      if (rows.length === 0) return 0;
      const seqs = rows.map((r) => Number(r.seq));
      const ev = await c.query<{ seq: string }>('DELETE FROM events WHERE project_id = $1 AND seq = ANY($2::bigint[]) RETURNING seq', [project, seqs]);
      const events = new Set(ev.rows.map((r) => Number(r.seq)));
      const recordSeqs = seqs.filter((s) => !events.has(s));
      const ids = (await recordsOf(c, project, recordSeqs, bound === null ? null : { bound, lastSeq })).map((r) => r.id);
      const ex = ids.length === 0 ? { rowCount: 0 } : await c.query('DELETE FROM calls WHERE id = ANY($1::text[])', [ids]);
      const ch = await c.query('DELETE FROM event_chain WHERE project_id = $1 AND chain_pos <= $2', [project, Number(rows[rows.length - 1].chain_pos)]);
      // `executions`, not the table's name: the archives API's `deleted` key for call records.
      await addArchiveDeleted(c, a.id, { events: ev.rowCount ?? 0, executions: ex.rowCount ?? 0, event_chain: ch.rowCount ?? 0 });
      return rows.length;
    });
    if (n === 0) return;
    await o.step();
  }
}

/**
 * The project's records of these seqs that the batch deletes: all of them, or with a deferral
 * (`bound`, the first id of the weeks not deferred) only those outside the deferred weeks (in the
 * DEFAULT partition or a later week) and those past the archive's last seq. Each read is pruned
 * to the partitions it can find such a record in: the deferred weeks' rows, most of an archive's,
 * are not read at all.
 */
async function recordsOf(c: Queryable, project: string, seqs: number[], deferral: { bound: string; lastSeq: number } | null): Promise<{ id: string }[]> {
  if (seqs.length === 0) return [];
  const wanted = new Set(seqs);
  let lo = seqs[0];
  let hi = seqs[0];
  for (const s of seqs) {
    if (s < lo) lo = s;
    if (s > hi) hi = s;
  }
  // Each read: its table and its condition beyond the project and the seqs, on parameters from $1.
  const reads: { from: string; where: string; params: (string | number)[] }[] = deferral
    ? [
        { from: 'calls', where: 'id >= $1', params: [deferral.bound] },
        { from: 'calls_default', where: 'id < $1', params: [deferral.bound] },
        ...(hi > deferral.lastSeq ? [{ from: 'calls', where: 'id < $1 AND seq > $2', params: [deferral.bound, deferral.lastSeq] }] : []),
      ]
    : [{ from: 'calls', where: 'true', params: [] }];
  const out = new Map<string, { id: string; seq: string }>();
  for (const r of reads) {
    const k = r.params.length;
    const sql = (where: string) => `SELECT id, seq FROM ${r.from} WHERE ${r.where} AND project_id = $${k + 1} AND ${where}`;
    // The span's range scans, cut short past twice the records wanted (records chained far out of
    // seq order); what they missed is read by key.
    const spanned = await c.query<{ id: string; seq: string }>(`${sql(`seq >= $${k + 2} AND seq <= $${k + 3}`)} LIMIT $${k + 4}`, [...r.params, project, lo, hi, 2 * seqs.length]);
    for (const x of spanned.rows) if (wanted.has(Number(x.seq))) out.set(x.id, x);
    if (spanned.rows.length < 2 * seqs.length) continue;
    const found = new Set([...out.values()].map((x) => Number(x.seq)));
    const missing = seqs.filter((s) => !found.has(s));
    if (missing.length === 0) continue;
    for (const x of (await c.query<{ id: string; seq: string }>(sql(`seq = ANY($${k + 2}::bigint[])`), [...r.params, project, missing])).rows) out.set(x.id, x);
  }
  return [...out.values()];
}

/**
 * Permits issued before the cutoff that no remaining record or event names and no retained
 * permit descends from, walked in (issued_at, id) order through the project's time index a batch
 * at a time (a keyset, so the permits a retained row still names are read once); each check is a
 * lookup by the permit's id in the naming column's index (LATERAL … LIMIT 1, never a join over
 * all the project's records). Permit ids are in the "C" collation, the columns naming them in the
 * database's: compared as they are, the comparison takes the id's collation and no index of the
 * naming column serves it (a scan of every week's index per permit, or a hash of them all), so the
 * id is compared in the column's. A permit whose child is deleted later in the walk is tried
 * again at its end.
 */
async function deletePermits(db: Db, a: ArchiveRow, o: { batch: number; scope: Scope; step: () => Promise<void> }): Promise<void> {
  const project = a.project_id;
  const cutoff = new Date(a.window_until);
  const { scope } = o;
  let after = null as { at: string; id: string } | null;
  let waiting: string[] = [];
  type Candidate = { id: string; at: string; named: boolean; parent: boolean };
  for (;;) {
    const { rows }: { rows: Candidate[] } = await db.query<Candidate>(
      `WITH c AS MATERIALIZED (
         SELECT id, issued_at FROM ${scope.from}
          WHERE project_id = $1 AND issued_at < $2 AND (issued_at, id) > ($3::timestamptz, $4::text) AND ${scope.where(6)}
          ORDER BY issued_at, id LIMIT $5)
       SELECT c.id, c.issued_at::text AS at, (x.one IS NOT NULL OR e.one IS NOT NULL OR k.one IS NOT NULL) AS named, (ck.one IS NOT NULL) AS parent
         FROM c
         LEFT JOIN LATERAL (SELECT 1 AS one FROM calls x WHERE x.permit_id = c.id COLLATE "default" LIMIT 1) x ON true
         LEFT JOIN LATERAL (SELECT 1 AS one FROM events e WHERE e.project_id = $1 AND e.permit_id = c.id COLLATE "default" LIMIT 1) e ON true
         LEFT JOIN LATERAL (SELECT 1 AS one FROM permits k WHERE k.parent_permit_id = c.id COLLATE "default" AND k.issued_at >= $2 LIMIT 1) k ON true
         LEFT JOIN LATERAL (SELECT 1 AS one FROM permits k WHERE k.parent_permit_id = c.id COLLATE "default" LIMIT 1) ck ON true
        ORDER BY c.issued_at, c.id`,
      [project, cutoff, after?.at ?? '-infinity', after?.id ?? '', o.batch, ...scope.bound],
    );
    if (rows.length === 0) break;
    after = { at: rows[rows.length - 1].at, id: rows[rows.length - 1].id };
    const free = rows.filter((r) => !r.named).map((r) => r.id);
    const deleted = await deletePermitIds(db, a, free);
    // A parent whose child was not in this batch waits for the child's batch.
    const gone = new Set(deleted);
    waiting.push(...rows.filter((r) => !r.named && r.parent && !gone.has(r.id)).map((r) => r.id));
    await o.step();
  }
  while (waiting.length > 0) {
    const deleted = await deletePermitIds(db, a, waiting.slice(0, o.batch));
    const rest = waiting.slice(o.batch);
    const kept = waiting.slice(0, o.batch).filter((id) => !deleted.includes(id));
    // Stops once a round deletes nothing: what is left is named by a retained permit.
    if (deleted.length === 0 && rest.length === 0) break;
    waiting = [...rest, ...(deleted.length > 0 ? kept : [])];
    await o.step();
  }
}

/** Deletes these permits (and their usage reports, evidence and attestations) except those a permit not among them descends from; returns the ids deleted. */
async function deletePermitIds(db: Db, a: ArchiveRow, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  return withTransaction(db, async (c) => {
    // A child whose parent is in this batch goes with it; a parent a permit outside it still names waits.
    const { rows } = await c.query<{ id: string }>(
      `SELECT p.id FROM unnest($1::text[]) AS p(id)
        WHERE NOT EXISTS (SELECT 1 FROM permits k WHERE k.parent_permit_id = p.id AND NOT (k.id = ANY($1::text[])))`,
      [ids],
    );
    const gone = rows.map((r) => r.id);
    if (gone.length === 0) return [];
    await c.query('DELETE FROM permit_usage_reports WHERE permit_id = ANY($1::text[])', [gone]);
    await c.query('DELETE FROM permit_evidence WHERE project_id = $2 AND permit_id = ANY($1::text[])', [gone, a.project_id]);
    await c.query('DELETE FROM permit_attestations WHERE permit_id = ANY($1::text[]) OR child_permit_id = ANY($1::text[])', [gone]);
    const r = await c.query('DELETE FROM permits WHERE id = ANY($1::text[])', [gone]);
    await addArchiveDeleted(c, a.id, { permits: r.rowCount ?? 0 });
    return gone;
  });
}
