/**
 * The append-only event log's rows: appending events unchained (the sequencer,
 * src/db/repositories/event-chain.ts, chains them shortly after) and reading them back. An event
 * row is never updated; readers use the `events_chained` view, which shows an event by `seq`
 * whether or not it is chained yet.
 */
import type { Queryable } from '../pool';
import { batchEvents } from '../../events/batch';
import type { EventRecord, NewEvent } from '../../events/types';

/**
 * Appends events, unchained (the sequencer chains them shortly after), in one statement: the
 * insert the batch statements use (`tollgate_insert_batch_events`, migration 0107), one entry per
 * project in order of first appearance, each project's events in their order. On a PoolClient
 * inside a transaction they commit or roll back with it.
 */
export async function appendEvents(db: Queryable, events: NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  const projects = [...new Set(events.map((e) => e.projectId))];
  const calls = projects.map((project) => ({ project, ...batchEvents(events.filter((e) => e.projectId === project)) }));
  await db.query('SELECT tollgate_insert_batch_events($1::jsonb, $2::int[], $3::text[])', [JSON.stringify(calls), calls.map((_, i) => i + 1), ['project']]);
}

export async function appendEvent(db: Queryable, ev: NewEvent): Promise<void> {
  await appendEvents(db, [ev]);
}

/**
 * Whether a request has a stored event of this type (e.g. provider.request_sent: the call may have
 * reached the provider). A pipeline call's events are not stored: its dispatch start says it.
 */
export async function requestHasEvent(db: Queryable, projectId: string, requestId: string, eventType: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM events WHERE project_id = $1 AND request_id = $2 AND event_type = $3 LIMIT 1', [projectId, requestId, eventType]);
  return (rowCount ?? 0) > 0;
}

/**
 * Stored event rows of a request, by seq. A pipeline call's events are derived from its record, not
 * stored: readers use log-events.ts's requestTimeline, which merges both.
 */
export async function listEventsByRequest(db: Queryable, projectId: string, requestId: string): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    'SELECT * FROM events_chained WHERE project_id = $1 AND request_id = $2 ORDER BY seq',
    [projectId, requestId],
  );
  return rows;
}

/** Stored event rows of a permit, by seq (readers: log-events.ts's permitsEvents, which adds the derived ones). */
export async function listEventsByPermit(db: Queryable, projectId: string, permitId: string): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    'SELECT * FROM events_chained WHERE project_id = $1 AND permit_id = $2 ORDER BY seq',
    [projectId, permitId],
  );
  return rows;
}

/** Stored event rows of a project after a seq (the governance list, log-events.ts's listLogEvents, adds the derived ones). */
export async function listEvents(
  db: Queryable,
  projectId: string,
  opts: { afterSeq?: number; limit?: number; eventType?: string } = {},
): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    `SELECT * FROM events_chained WHERE project_id = $1 AND seq > $2 AND ($3::text IS NULL OR event_type = $3)
     ORDER BY seq LIMIT $4`,
    [projectId, opts.afterSeq ?? 0, opts.eventType ?? null, Math.min(opts.limit ?? 100, 1000)],
  );
  return rows;
}

/** Stored event rows of several permits, by seq (readers: log-events.ts's permitsEvents, which adds the derived ones). */
export async function listEventsForPermits(db: Queryable, projectId: string, permitIds: string[]): Promise<EventRecord[]> {
  if (permitIds.length === 0) return [];
  const { rows } = await db.query<EventRecord>(
    'SELECT * FROM events_chained WHERE project_id = $1 AND permit_id = ANY($2::text[]) ORDER BY seq',
    [projectId, permitIds],
  );
  return rows;
}
