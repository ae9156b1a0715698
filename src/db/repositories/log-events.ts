/**
 * The project's event log as every reader sees it: stored event rows merged with the events
 * derived from call records (src/executions/lifecycle-events.ts: a call of the in-process pipeline writes
 * no event row, its record and permit hold them) and, for timelines, with the first events of calls
 * still in flight (their permit's `closing`); a session turn's call timeline adds its permit's stored
 * events, which the session keeps under its own request id. The merge rules are src/events/merge.ts; this file
 * reads what they merge. Records are read by their indexes (calls_project_seq_idx, the primary
 * key, calls_permit_idx), their permits in one query per read.
 */
import type { Queryable } from '../pool';
import { CALL_ID_KIND } from '../../ids';
import { listEventsByRequest, listEventsForPermits } from './events';
import { listPermitsByRequest, type PermitRecord } from './permits';
import { seqSpan } from './record-leaves';
import type { EventRecord } from '../../events/types';
import { findGovernanceEvent, listGovernanceEvents } from './governance-events';
import { derivedEventRef, inFlightEvents, recordEvents } from '../../executions/lifecycle-events';
import type { PermitColumns, RecordColumns } from '../../executions/lifecycle';
import { filterReachesRecords, matchesFilter, mergeBySeq, timelineOf, type EventFilter, type LogEvent, type Order } from '../../events/merge';

/** A record with a lifecycle and its chain row's columns (null until the sequencer chains it). */
type RecordRow = RecordColumns & { chain_pos: string | null; link_prev_hash: string | null; link_hash: string | null };

/**
 * The record columns the derived events read (of the stored envelope only its routing and usage,
 * which the dispatch and usage events read), with the record's chain row. Only records with a
 * lifecycle: the others' events are rows.
 */
const RECORDS_SQL = `
  SELECT x.id, x.project_id, x.seq, x.permit_id, x.job_id, x.session_id, x.operation, x.mode, x.status, x.status_code, x.provider, x.model,
         x.input_tokens, x.output_tokens, x.cost_usd_micros, x.estimated_final, x.error_code, x.created_at, x.completed_at,
         jsonb_build_object('routing', x.envelope->'routing', 'usage', x.envelope->'usage') AS envelope, x.lifecycle,
         c.chain_pos, c.prev_hash AS link_prev_hash, c.hash AS link_hash
    FROM calls x LEFT JOIN event_chain c ON c.seq = x.seq`;
const RECORD_IS_DERIVING = 'x.seq IS NOT NULL AND x.lifecycle IS NOT NULL';

const PERMIT_COLUMNS = `id, project_id, request_id, route, operation, provider, model, workflow_id, decision, reason_code, display_reason,
  reserved_cost_micros, issued_at, expires_at, metadata, closing`;

/** The permits of these ids, those in `known` (already read) without a statement. */
async function permitsByIds(db: Queryable, projectId: string, ids: string[], known: readonly PermitColumns[]): Promise<Map<string, PermitColumns>> {
  const out = new Map(known.map((p) => [p.id, p]));
  const missing = ids.filter((id) => !out.has(id));
  if (missing.length === 0) return out;
  const { rows } = await db.query<PermitColumns>(`SELECT ${PERMIT_COLUMNS} FROM permits WHERE project_id = $1 AND id = ANY($2::text[])`, [projectId, missing]);
  for (const p of rows) out.set(p.id, p);
  return out;
}

/** Each record's derived events (one list per record, in its order), their permits read in one query (none for those in `known`). */
async function deriveAll(db: Queryable, projectId: string, records: RecordRow[], known: readonly PermitColumns[] = []): Promise<LogEvent[][]> {
  const permits = await permitsByIds(db, projectId, [...new Set(records.map((r) => r.permit_id).filter((id): id is string => id !== null))], known);
  return records.map((r) => {
    const pos = r.chain_pos === null ? null : Number(r.chain_pos);
    const link = pos !== null && r.link_prev_hash !== null && r.link_hash !== null ? { seq: Number(r.seq), prev_hash: r.link_prev_hash, hash: r.link_hash } : null;
    return recordEvents(r, r.permit_id ? permits.get(r.permit_id) ?? null : null, pos).map((e) => ({ ...e, link }));
  });
}

async function recordsWhere(db: Queryable, where: string, params: unknown[], tail = ''): Promise<RecordRow[]> {
  const { rows } = await db.query<RecordRow>(`${RECORDS_SQL} WHERE ${RECORD_IS_DERIVING} AND ${where} ${tail}`, params);
  return rows;
}

/** The first events of the calls in flight under these permits (or this request), from their `closing`. */
async function inFlightWhere(db: Queryable, where: string, params: unknown[]): Promise<LogEvent[]> {
  const { rows } = await db.query<PermitColumns>(`SELECT ${PERMIT_COLUMNS} FROM permits WHERE closing IS NOT NULL AND ${where} ORDER BY issued_at, id`, params);
  return rows.flatMap((p) => inFlightEvents(p));
}

/**
 * The stored events of a session turn's permit, when `requestId` is a session turn's call record:
 * the session keeps them as rows under its own request id (the session's timeline), so the call's
 * timeline reads them by the record's permit. One statement; nothing for any other request.
 */
async function turnPermitEvents(db: Queryable, projectId: string, requestId: string): Promise<EventRecord[]> {
  if (!requestId.startsWith(`${CALL_ID_KIND}_`)) return [];
  const { rows } = await db.query<EventRecord>(
    `SELECT * FROM events_chained
      WHERE project_id = $1 AND request_id IS DISTINCT FROM $2
        AND permit_id = (SELECT permit_id FROM calls WHERE project_id = $1 AND id = $2 AND session_id IS NOT NULL)
      ORDER BY seq`,
    [projectId, requestId],
  );
  return rows;
}

/**
 * A request's timeline: every event of the request (stored, derived from its record, and in
 * flight) and the request's permits. The permits are read once, by `(project_id, request_id)`, for
 * the answer's permit ids, the events of calls in flight and the record's derived events: that
 * read visits every week's partition (permits are partitioned by their own id), the costliest of
 * the timeline's statements.
 */
export async function requestTimeline(db: Queryable, projectId: string, requestId: string): Promise<{ events: LogEvent[]; permits: PermitRecord[] }> {
  const [stored, records, permits, turnPermit] = await Promise.all([
    listEventsByRequest(db, projectId, requestId),
    recordsWhere(db, 'x.project_id = $1 AND x.id = $2', [projectId, requestId]),
    listPermitsByRequest(db, projectId, requestId),
    turnPermitEvents(db, projectId, requestId),
  ]);
  const inFlight = permits.filter((p) => p.closing !== null).flatMap((p) => inFlightEvents(p));
  const derived = (await deriveAll(db, projectId, records, permits)).flat();
  return { events: timelineOf(mergeBySeq(stored, turnPermit, 'asc'), derived, inFlight), permits };
}

/** Every event of these permits (their timelines together), in seq order, those in flight last. */
export async function permitsEvents(db: Queryable, projectId: string, permitIds: string[]): Promise<LogEvent[]> {
  if (permitIds.length === 0) return [];
  const [stored, records, inFlight] = await Promise.all([
    listEventsForPermits(db, projectId, permitIds),
    recordsWhere(db, 'x.project_id = $1 AND x.permit_id = ANY($2::text[])', [projectId, permitIds]),
    inFlightWhere(db, 'project_id = $1 AND id = ANY($2::text[])', [projectId, permitIds]),
  ]);
  return timelineOf(stored, (await deriveAll(db, projectId, records)).flat(), inFlight);
}

/** Records read per round of a list's scan of records. */
const RECORD_SCAN_BATCH = 100;
/** A record's derived events take seq + 1 … seq + 63 (the sequence hands out every 64th value, migration 0170). */
const RECORD_SEQ_SPAN = 64;

/**
 * One page of the governance list, by seq: the stored rows matching the filter (one query of
 * `limit`) merged with the matching events derived from records. Records are read in seq order
 * from the cursor, in batches, until `limit` derived events match or no record can precede the
 * page's last stored row; a record's events sort between its seq and the next record's, so the
 * events collected are the first derived ones in order and the merge skips nothing.
 */
export async function listLogEvents(
  db: Queryable,
  projectId: string,
  f: EventFilter & { order: Order; afterSeq?: number; limit: number },
): Promise<LogEvent[]> {
  const asc = f.order === 'asc';
  const stored = await listGovernanceEvents(db, projectId, f);
  if (!filterReachesRecords(f)) return stored;
  // Past the page's last stored row nothing derived can be on the page.
  const full = stored.length === f.limit;
  const lastStored = full ? Number(stored[stored.length - 1].seq) : null;
  const derived: LogEvent[] = [];
  // The scan's position: the last record read (records are unique per seq within a project).
  let from: number | null = f.afterSeq === undefined ? null : asc ? f.afterSeq - RECORD_SEQ_SPAN : f.afterSeq;
  for (;;) {
    const records = await recordsWhere(
      db,
      `x.project_id = $1
        AND ($2::bigint IS NULL OR x.seq ${asc ? '>' : '<'} $2)
        AND ($3::bigint IS NULL OR x.seq ${asc ? '< $3' : '> $3 - ' + RECORD_SEQ_SPAN})
        AND ($4::timestamptz IS NULL OR x.completed_at >= $4)
        AND ($5::text IS NULL OR x.id = $5)
        AND ($6::text IS NULL OR x.permit_id = $6)`,
      [projectId, from, lastStored, f.since ?? null, f.requestId ?? null, f.permitId ?? null, RECORD_SCAN_BATCH],
      `ORDER BY x.seq ${asc ? 'ASC' : 'DESC'} LIMIT $7`,
    );
    for (const events of await deriveAll(db, projectId, records)) {
      for (const e of asc ? events : events.reverse()) {
        const seq = Number(e.seq);
        if (f.afterSeq !== undefined && (asc ? seq <= f.afterSeq : seq >= f.afterSeq)) continue;
        if (matchesFilter(e, f)) derived.push(e);
      }
    }
    if (records.length < RECORD_SCAN_BATCH || derived.length >= f.limit) break;
    from = Number(records[records.length - 1].seq);
  }
  return mergeBySeq(stored as LogEvent[], derived, f.order, f.limit);
}

/** One event by id: a stored row, or the derived event its id names (`evt_<execution id>.<n>`). */
export async function findLogEvent(db: Queryable, projectId: string, eventId: string): Promise<LogEvent | null> {
  const ref = derivedEventRef(eventId);
  if (ref) {
    const records = await recordsWhere(db, 'x.project_id = $1 AND x.id = $2', [projectId, ref.executionId]);
    const found = (await deriveAll(db, projectId, records)).flat().find((e) => e.id === eventId);
    if (found) return found;
  }
  return findGovernanceEvent(db, projectId, eventId);
}

export type ChainedEvent = LogEvent & { chain_pos: number };

/**
 * The chained events after position `afterPos` (up to `toPos`, at most `limit` chain rows), in
 * chain order: a row chaining a record stands for all its derived events, each at that position.
 * `types` narrows what is returned (the stored rows in the query); a chain row whose event or record
 * is gone is skipped. `to` is the last position read (null when none), whatever it held.
 * Once `signal` aborts (a stream's client left), no further statement is sent and nothing is
 * returned: the records and permits of a batch nobody reads would run beside the next request.
 */
export async function chainedEventsAfter(
  db: Queryable,
  projectId: string,
  range: { afterPos: number; toPos?: number; limit?: number; types?: string[]; signal?: AbortSignal },
): Promise<{ events: ChainedEvent[]; to: number | null }> {
  const withRecords = filterReachesRecords({ eventTypes: range.types });
  const { rows } = await db.query<EventRecord & { chain_pos: string; chain_seq: string; is_event: boolean }>(
    `SELECT e.*, c.seq AS chain_seq, c.chain_pos, c.prev_hash, c.hash, e.seq IS NOT NULL AS is_event
       FROM event_chain c LEFT JOIN events e ON e.seq = c.seq
      WHERE c.project_id = $1 AND c.chain_pos > $2 AND ($3::bigint IS NULL OR c.chain_pos <= $3)
        AND (($4::text[] IS NULL OR e.event_type = ANY($4)) OR (e.seq IS NULL AND $5::boolean))
      ORDER BY c.chain_pos LIMIT $6`,
    [projectId, range.afterPos, range.toPos ?? null, range.types ?? null, withRecords, range.limit ?? null],
  );
  const recordSeqs = rows.filter((r) => !r.is_event).map((r) => r.chain_seq);
  const bySeq = new Map<number, LogEvent[]>();
  const aborted = () => range.signal?.aborted === true;
  if (recordSeqs.length > 0) {
    if (aborted()) return { events: [], to: null };
    // The bounds change no result: without them the planner counts each seq as likely in every
    // week's partition (records are partitioned by id, not seq) and, from a few dozen seqs on,
    // plans a parallel scan of them all, tens of times slower than each week's index probed.
    const { wanted, lo, hi } = seqSpan(recordSeqs);
    const records = await recordsWhere(db, 'x.project_id = $1 AND x.seq = ANY($2::bigint[]) AND x.seq BETWEEN $3 AND $4', [projectId, wanted, lo, hi]);
    if (aborted()) return { events: [], to: null };
    const derived = await deriveAll(db, projectId, records);
    records.forEach((r, i) => bySeq.set(Number(r.seq), derived[i]));
  }
  const types = range.types ? new Set(range.types) : null;
  const out: ChainedEvent[] = [];
  for (const r of rows) {
    if (r.is_event) {
      const { chain_seq: _seq, is_event: _isEvent, ...event } = r;
      out.push({ ...event, chain_pos: Number(r.chain_pos) });
      continue;
    }
    for (const e of bySeq.get(Number(r.chain_seq)) ?? []) {
      if (!types || types.has(e.event_type)) out.push({ ...e, chain_pos: Number(r.chain_pos) });
    }
  }
  return { events: out, to: rows.length === 0 ? null : Number(rows[rows.length - 1].chain_pos) };
}
