/**
 * Reading a stored event's canonical form (src/events/canonical.ts) from its plain columns, which
 * the sequencer, checkpoints and exports select instead of whole rows.
 */
import type { Queryable } from '../pool';
import { canonicalEvent, canonicalFromColumns, type CanonicalColumns } from '../../events/canonical';
import type { EventRecord } from '../../events/types';

/**
 * The columns the sequencer reads to hash a stored event without a whole row: each text column as
 * it is, the metadata as jsonb's text, and the timestamp as whole milliseconds since the epoch,
 * floored as a Date parsed from the same value truncates them (NULL outside years 1–9999, where
 * toISOString writes six-digit years: the event is then hashed from its whole row). PostgreSQL
 * rendering the canonical form itself (to_json per field, to_char) cost it several times the CPU of
 * the plain columns (docs/decisions/event-hash-chain.md).
 * test/integration/db/canonical-columns.test.ts checks `canonicalFromColumns` against
 * `canonicalEvent` on stored rows.
 */
export const CANONICAL_COLUMNS_SQL = `
  e.event_type, e.id, e.job_id, e.metadata::text AS metadata, e.model, e.permit_id, e.phase, e.project_id, e.provider,
  e.request_id, e.session_id, e.source,
  CASE WHEN e.timestamp >= '0001-01-01 00:00:00+00' AND e.timestamp < '10000-01-01 00:00:00+00'
       THEN floor(extract(epoch FROM e.timestamp) * 1000)::bigint END AS timestamp_ms`;

/** A stored event's canonical form by its seq, from its columns as the sequencer wrote it when it chained the event. */
export async function canonicalOfEventSeq(db: Queryable, seq: string | number, prevHash: string): Promise<string> {
  const { rows } = await db.query<CanonicalColumns>(`SELECT e.seq, ${CANONICAL_COLUMNS_SQL} FROM events e WHERE e.seq = $1`, [seq]);
  return canonicalOfStored(db, rows[0], prevHash);
}

/** The canonical form from the columns, or from the whole stored row where they cannot carry it. */
export async function canonicalOfStored(db: Queryable, c: CanonicalColumns, prevHash: string): Promise<string> {
  return canonicalFromColumns(c, prevHash) ?? canonicalEvent((await db.query<EventRecord>('SELECT * FROM events WHERE seq = $1', [c.seq])).rows[0], prevHash);
}
