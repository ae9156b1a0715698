/**
 * Call records as chain leaves, read whole: the `calls` rows (with a `seq`, migration 0170) and
 * the permit decisions that `recordLeafEvent` (src/executions/record-leaf.ts) hashes, as pg parses
 * them. Leaves are written from the columns' text (src/db/repositories/record-leaf-text.ts); a
 * record is read whole only where its timestamps are outside what those columns carry.
 */
import type { QueryResultRow } from 'pg';
import type { Queryable } from '../pool';
import type { PermitColumns, RecordColumns } from '../../executions/lifecycle';

/** A chained (or pending) call record as its leaf is written from. */
export interface StoredRecordLeaf {
  project_id: string;
  seq: string;
  row: RecordColumns & Record<string, unknown>;
  permit: PermitColumns | null;
}

/**
 * The record's persisted columns, named one by one: a column a later migration adds is not in
 * records chained before it, so it must not appear in their leaves when they are verified.
 * `session_id` (migration 0290) is carried only where it is set (`leafOf`): records without a
 * session, and every record chained before it, hash as they did.
 * `recorded_at` is left to `recordLeafEvent`'s own exclusions (the insert's clock, not the call's).
 * Of the permit, the decision columns the leaf carries; of its metadata, only the firewall decision.
 */
const RECORD_LEAF_SQL = `
  x.id, x.project_id, x.seq, x.route, x.operation, x.mode, x.status, x.status_code, x.permit_id, x.provider, x.model,
  x.intent_id, x.idempotency_key, x.key_id, x.job_id, x.session_id, x.input_tokens, x.output_tokens, x.cost_usd_micros,
  x.estimated_final, x.error_code, x.created_at, x.completed_at, x.duration_ms, x.envelope, x.lifecycle,
  p.id AS p_id, p.project_id AS p_project_id, p.request_id AS p_request_id, p.route AS p_route, p.operation AS p_operation,
  p.provider AS p_provider, p.model AS p_model, p.workflow_id AS p_workflow_id, p.decision AS p_decision,
  p.reason_code AS p_reason_code, p.display_reason AS p_display_reason, p.reserved_cost_micros AS p_reserved_cost_micros,
  p.issued_at AS p_issued_at, p.expires_at AS p_expires_at, p.metadata->'decision_metadata'->'firewall' AS p_firewall`;

/**
 * Each record's permit, by its id: a lookup in the permit's week (LATERAL … LIMIT 1 keeps it a
 * lookup per record; as a join the planner read every week of permits into a hash for a few
 * thousand records).
 */
export const RECORD_PERMIT_SQL = 'LEFT JOIN LATERAL (SELECT * FROM permits p WHERE p.id = x.permit_id LIMIT 1) p ON true';

type RecordLeafRow = Record<string, unknown> & {
  project_id: string;
  seq: string;
  p_id: string | null;
};

function leafOf(r: RecordLeafRow): StoredRecordLeaf {
  const row: Record<string, unknown> = {};
  const permit: Record<string, unknown> = {};
  for (const k in r) {
    if (k.startsWith('p_')) permit[k.slice(2)] = r[k];
    else if (k !== 'session_id' || r[k] !== null) row[k] = r[k];
  }
  const firewall = permit.firewall;
  delete permit.firewall;
  permit.metadata = { decision_metadata: { firewall } };
  return {
    project_id: r.project_id,
    seq: String(r.seq),
    row: row as StoredRecordLeaf['row'],
    permit: r.p_id === null ? null : (permit as unknown as PermitColumns),
  };
}

/**
 * `columns` (of the record `x` and its permit `p`) of the records at (project, seq) keys, in one
 * statement (through the calls_project_seq_idx index); keys no record holds are absent.
 */
export async function selectRecordsAtKeys<R extends QueryResultRow>(db: Queryable, columns: string, projectIds: readonly string[], seqs: ReadonlyArray<string | number>): Promise<R[]> {
  if (seqs.length === 0) return [];
  const { rows } = await db.query<R>(
    `SELECT ${columns}
       FROM unnest($1::text[], $2::bigint[]) AS k(project_id, seq)
       JOIN calls x ON x.project_id = k.project_id AND x.seq = k.seq
       ${RECORD_PERMIT_SQL}`,
    [projectIds, seqs.map(String)],
  );
  return rows;
}

/** The records at (project, seq) keys, with their permits, read whole; keys no record holds are absent from the answer. */
export async function readRecordLeaves(db: Queryable, projectIds: readonly string[], seqs: ReadonlyArray<string | number>): Promise<StoredRecordLeaf[]> {
  return (await selectRecordsAtKeys<RecordLeafRow>(db, RECORD_LEAF_SQL, projectIds, seqs)).map(leafOf);
}

/** The seqs asked for as numbers, and their span. */
export function seqSpan(seqs: ReadonlyArray<string | number>): { wanted: number[]; lo: number; hi: number } {
  const wanted = seqs.map(Number);
  let lo = wanted[0];
  let hi = wanted[0];
  for (const s of wanted) {
    if (s < lo) lo = s;
    if (s > hi) hi = s;
  }
  return { wanted, lo, hi };
}
