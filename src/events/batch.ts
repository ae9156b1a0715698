/**
 * A call's new events as the batch insert takes them (`appendEvents` of
 * src/db/repositories/events.ts, and the governed call's batch statements).
 */
import { newId } from '../ids';
import { eventColumns, type NewEvent } from './types';

/** Fields a call's events usually share; `batchEvents` sends each once per call. */
const SHAREABLE_EVENT_FIELDS: readonly string[] = ['timestamp', 'source', 'phase', 'provider', 'model', 'permit_id', 'request_id', 'job_id', 'session_id'];

/**
 * A call's events as the batch statements take them (`tollgate_insert_batch_events`): a field
 * every event of the call has with one value is sent once in `event_defaults`, a null field not at
 * all, and the project id comes from the call. The payload is parsed into jsonb by PostgreSQL and
 * serialised by this process, so fewer bytes per event count twice.
 */
export function batchEvents(events: NewEvent[]): { events: Record<string, unknown>[]; event_defaults: Record<string, unknown> } {
  const rows = eventRows('', events);
  if (rows.length === 0) return { events: [], event_defaults: {} };
  const shared = new Set(SHAREABLE_EVENT_FIELDS.filter((f) => rows.every((r) => r[f] === rows[0][f])));
  const defaults: Record<string, unknown> = {};
  for (const f of shared) if (rows[0][f] !== null) defaults[f] = rows[0][f];
  const own = rows.map((r) => {
    const o: Record<string, unknown> = {};
    for (const k in r) if (r[k] !== null && k !== 'project_id' && !shared.has(k)) o[k] = r[k];
    return o;
  });
  return { events: own, event_defaults: defaults };
}

/** Events as rows with every column (`batchEvents` sends them compactly). */
export function eventRows(projectId: string, events: NewEvent[]): Record<string, unknown>[] {
  return events.map((e) => ({
    id: newId('evt'),
    // Millisecond precision: what a JS Date carries, so the stored value re-hashes identically.
    timestamp: (e.timestamp ?? new Date()).toISOString(),
    ...eventColumns(e),
    project_id: projectId,
  }));
}
