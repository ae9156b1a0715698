/**
 * Whether a week partition of call records or permits holds only archived rows (src/retention/
 * partitions.ts drops it whole then). Each project's rows are archived up to its latest verified
 * archive (`archives`): a record with a place in the log when its seq is at most the archive's
 * last and it is neither chained nor waiting to be any more (its chain row deleted with the
 * archive's leaves), a record without one when it was created before the archive's cutoff, a
 * permit when it was issued before it. Every check is an index lookup per project or per row of
 * the week (never a read of other weeks' rows), run in the transaction that drops the week.
 */
import type { Queryable } from '../pool';

/**
 * A column naming a permit (in the database's collation) in the week's ids [$1, $2): the range as
 * its index reads it, and as the bytes compare, which the partition's bounds are drawn in (the two
 * agree where `permitIdsSortBytewise` holds; dropWeek checks it first).
 */
const inWeek = (column: string) => `(${column} >= $1 AND ${column} < $2 AND ${column} COLLATE "C" >= $1 AND ${column} COLLATE "C" < $2)`;

/** Each project's latest verified archive: its last seq and cutoff. */
const ANCHORS = `SELECT DISTINCT ON (project_id) project_id, last_seq, window_until FROM archives
                  WHERE status IN ('verified', 'completed') ORDER BY project_id, last_index DESC`;

/** Whether a record row `x` (with its project's anchor `a`, possibly null) is one not archived yet. */
const RECORD_NOT_ARCHIVED = `(a.project_id IS NULL
   OR (x.seq IS NULL AND x.created_at >= a.window_until)
   OR (x.seq IS NOT NULL AND (x.seq > a.last_seq
         OR EXISTS (SELECT 1 FROM event_chain c WHERE c.seq = x.seq)
         OR EXISTS (SELECT 1 FROM event_chain_pending q WHERE q.project_id = x.project_id AND x.seq = ANY(q.seqs)))))`;

/** The first of the reasons `parts` (each a parenthesised query of one column `why`) that holds, with ANCHORS as `a`. */
const firstReason = (parts: string[]) => `WITH a AS MATERIALIZED (${ANCHORS})
     SELECT why FROM (${parts.join('\n       UNION ALL\n       ')}) w LIMIT 1`;

/** The first row of `partition` (a week of `kind`s) of a project that has no archive, as a reason (`why`); `a` is ANCHORS. */
const withoutArchive = (partition: string, kind: string) =>
  `(SELECT 'a ${kind} of project ' || pr.id || ', which has no archive' AS why FROM projects pr
      CROSS JOIN LATERAL (SELECT 1 FROM ${partition} x WHERE x.project_id = pr.id LIMIT 1) hit
     WHERE NOT EXISTS (SELECT 1 FROM a WHERE a.project_id = pr.id) LIMIT 1)`;

/**
 * The first row `x` of `partition` that `past.where` puts beyond its project's archive `a`, as a
 * reason ending in `past.why` (SQL string text): a lookup in the project's index of the partition,
 * only for the projects `past.when` (a condition on `a`) holds for, when given.
 */
const pastArchive = (partition: string, kind: string, past: { why: string; where: string; when?: string }) =>
  `(SELECT 'a ${kind} of project ' || a.project_id || '${past.why}' FROM a
      CROSS JOIN LATERAL (SELECT 1 FROM ${partition} x WHERE x.project_id = a.project_id AND ${past.where} LIMIT 1) hit${past.when ? ` WHERE ${past.when}` : ''} LIMIT 1)`;

/**
 * The first reason the records partition `partition` holds a row not archived, or null: a row of
 * a project without an archive, past its archive's cutoff or last seq (each a lookup in the
 * project's index of the partition), or a record whose chain row is still there: the chain rows
 * in the span of the week's seqs (a range of `event_chain`'s key: once the week is archived, its
 * leaves' chain rows are gone and the span holds few or none), each looked up in the week's index.
 * It runs again under the tables' exclusive locks just before the drop (src/db/partitions.ts), so
 * no step of it reads every row of the week.
 */
export async function recordsNotArchived(db: Queryable, partition: string): Promise<string | null> {
  const { rows } = await db.query<{ why: string }>(
    firstReason([
      withoutArchive(partition, 'record'),
      pastArchive(partition, 'record', { why: ' past its archive', where: 'x.seq > a.last_seq' }),
      pastArchive(partition, 'record', {
        why: " created after its archive''s cutoff",
        where: 'x.created_at >= a.window_until AND x.seq IS NULL',
        // Only where the project's newest record of the week (read from its time index) is at or
        // after the cutoff: the planner read the records without a seq by a scan of the whole
        // week, a project at a time, under the tables' exclusive locks.
        when: `(SELECT max(y.created_at) FROM ${partition} y WHERE y.project_id = a.project_id) >= a.window_until`,
      }),
      `(SELECT 'record ' || x.id || ', still in the log' FROM (
           SELECT min(s.lo) AS lo, max(s.hi) AS hi FROM projects pr CROSS JOIN LATERAL (
             SELECT (SELECT x.seq FROM ${partition} x WHERE x.project_id = pr.id AND x.seq IS NOT NULL ORDER BY x.seq LIMIT 1) AS lo,
                    (SELECT x.seq FROM ${partition} x WHERE x.project_id = pr.id AND x.seq IS NOT NULL ORDER BY x.seq DESC LIMIT 1) AS hi) s) span
          JOIN event_chain c ON c.seq >= span.lo AND c.seq <= span.hi
          JOIN ${partition} x ON x.project_id = c.project_id AND x.seq = c.seq LIMIT 1)`,
      `(SELECT 'record ' || x.id || ', waiting to be chained' FROM event_chain_pending q
          CROSS JOIN LATERAL unnest(q.seqs) AS s(seq) JOIN ${partition} x ON x.project_id = q.project_id AND x.seq = s.seq LIMIT 1)`,
    ]),
  );
  return rows[0]?.why ?? null;
}

/**
 * The first reason the permits partition `partition` (ids [from, to)) holds a permit not archived
 * or still needed, or null: a permit of a project without an archive or issued after its
 * archive's cutoff; a record outside `records` (the ids of the records partition dropped with it,
 * if any) not archived that names one of its permits; an event that names one; a permit of
 * another week that descends from one (its foreign key would refuse the drop).
 */
export async function permitsNotArchived(db: Queryable, partition: string, ids: { from: string; to: string }, records: { from: string; to: string }): Promise<string | null> {
  const { rows } = await db.query<{ why: string }>(
    firstReason([
      withoutArchive(partition, 'permit'),
      pastArchive(partition, 'permit', { why: " issued after its archive''s cutoff", where: 'x.issued_at >= a.window_until' }),
      `(SELECT 'record ' || x.id || ', not archived, names permit ' || x.permit_id FROM calls x LEFT JOIN a ON a.project_id = x.project_id
         WHERE ${inWeek('x.permit_id')} AND (x.id < $3 OR x.id >= $4) AND ${RECORD_NOT_ARCHIVED} LIMIT 1)`,
      `(SELECT 'event seq ' || hit.seq || ' names a permit of the week' FROM projects pr
          CROSS JOIN LATERAL (SELECT e.seq FROM events e WHERE e.project_id = pr.id AND ${inWeek('e.permit_id')} LIMIT 1) hit LIMIT 1)`,
      `(SELECT 'permit ' || k.id || ' descends from permit ' || k.parent_permit_id FROM permits k
         WHERE ${inWeek('k.parent_permit_id')} AND (k.id < $1 OR k.id >= $2) LIMIT 1)`,
    ]),
    [ids.from, ids.to, records.from, records.to],
  );
  return rows[0]?.why ?? null;
}

/** Deletes the rows that name the permits of ids [from, to) by foreign key (usage reports, evidence, attestations), before their partition is detached. */
export async function deletePermitDependents(db: Queryable, ids: { from: string; to: string }): Promise<void> {
  await db.query(`DELETE FROM permit_usage_reports WHERE ${inWeek('permit_id')}`, [ids.from, ids.to]);
  await db.query(`DELETE FROM permit_evidence WHERE ${inWeek('permit_id')}`, [ids.from, ids.to]);
  await db.query(`DELETE FROM permit_attestations WHERE ${inWeek('permit_id')} OR ${inWeek('child_permit_id')}`, [ids.from, ids.to]);
}

/**
 * Whether the database's collation orders permit ids (`permit_` and lowercase hex) as their bytes
 * do, as the week ranges are drawn: the columns that name a permit are in the database's collation,
 * and a range read through their indexes finds every id of a week only then. True of C, C.UTF-8,
 * glibc's and ICU's usual collations; not of an ICU collation that orders digits numerically.
 */
export async function permitIdsSortBytewise(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ same: boolean }>(
    `SELECT array(SELECT s FROM unnest($1::text[]) s ORDER BY s) = array(SELECT s FROM unnest($1::text[]) s ORDER BY s COLLATE "C") AS same`,
    [['permit_0', 'permit_019a', 'permit_0a', 'permit_09', 'permit_1', 'permit_10', 'permit_9f', 'permit_a', 'permit_f0', 'permit_ff', 'permit_', 'permit_00', 'permit_0f']],
  );
  return rows[0].same;
}
