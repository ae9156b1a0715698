/**
 * How stored event rows and the events derived from call records (src/executions/lifecycle-events.ts)
 * form one log: pure functions over lists already read, used by src/db/repositories/log-events.ts
 * (the reads) and the event stream. Stored events and records share the events' sequence, a
 * record's derived events taking the seqs after its own, so one integer order (`seq`) sorts both.
 */
import type { EventRecord } from './types';

/** A chain row's link: what a derived event shows as its place in the hash chain (its record's leaf). */
export interface ChainLink {
  seq: number;
  prev_hash: string;
  hash: string;
}

/**
 * An event of the log: a stored row, or derived from a record (`derived_from`) whose chain link is
 * `link` once the record is chained (a derived event has no hash of its own).
 */
export type LogEvent = EventRecord & { derived_from?: 'record' | 'permit'; link?: ChainLink | null };

/** The types a record derives (src/executions/lifecycle-events.ts); a filter naming none of them needs no record. */
export const DERIVED_EVENT_TYPES: ReadonlySet<string> = new Set([
  'permit.allowed',
  'permit.expiry_scheduled',
  'routing.selected_model',
  'execution.started',
  'provider.request_sent',
  'provider.response_received',
  'fallback.triggered',
  'fallback.selected_model',
  'usage.recorded',
  'request.completed',
  'request.errored',
]);

export type Order = 'asc' | 'desc';

/** pg returns bigint columns as text: seqs compare as numbers. */
const seqOf = (e: EventRecord): number => Number(e.seq);

/**
 * Two lists, each sorted by seq in `order`, merged in that order; at most `limit` events. Stored
 * and derived seqs never collide (a stored event takes a sequence value, a record's events the
 * values between its own and the next one handed out).
 */
export function mergeBySeq<E extends EventRecord>(a: E[], b: E[], order: Order, limit = Infinity): E[] {
  const out: E[] = [];
  const before = order === 'asc' ? (x: E, y: E) => seqOf(x) < seqOf(y) : (x: E, y: E) => seqOf(x) > seqOf(y);
  let i = 0;
  let j = 0;
  while (out.length < limit && (i < a.length || j < b.length)) {
    if (j >= b.length || (i < a.length && before(a[i], b[j]))) out.push(a[i++]);
    else out.push(b[j++]);
  }
  return out;
}

/**
 * A timeline: stored events and the events of the matching records in seq order, then the first
 * events of calls still in flight (no seq yet: they happened after everything stored), except those
 * of a call whose record is read too (it was recorded between the two reads).
 */
export function timelineOf(stored: LogEvent[], recorded: LogEvent[], inFlight: LogEvent[]): LogEvent[] {
  const sortedRecorded = [...recorded].sort((x, y) => seqOf(x) - seqOf(y));
  const merged = mergeBySeq(stored, sortedRecorded, 'asc');
  const recordedRequests = new Set(recorded.map((e) => e.request_id));
  return [...merged, ...inFlight.filter((e) => !recordedRequests.has(e.request_id))];
}

export interface EventFilter {
  eventTypes?: string[];
  since?: Date;
  until?: Date;
  requestId?: string;
  permitId?: string;
}

/** The governance list's filters, applied to a derived event as the SQL applies them to a row. */
export function matchesFilter(e: EventRecord, f: EventFilter): boolean {
  if (f.eventTypes && !f.eventTypes.includes(e.event_type)) return false;
  const t = new Date(e.timestamp).getTime();
  if (f.since && t < f.since.getTime()) return false;
  if (f.until && t >= f.until.getTime()) return false;
  if (f.requestId !== undefined && e.request_id !== f.requestId) return false;
  if (f.permitId !== undefined && e.permit_id !== f.permitId) return false;
  return true;
}

/** Whether a filter can match a derived event at all (else records need not be read). */
export function filterReachesRecords(f: Pick<EventFilter, 'eventTypes'>): boolean {
  return !f.eventTypes || f.eventTypes.some((t) => DERIVED_EVENT_TYPES.has(t));
}

/**
 * The frames of a stream read: the events of `types` (all without), each with the SSE id it is
 * sent with. Every event of a record sits at its record's chain position, so the id (the position a
 * client resumes after) goes only on the last event sent of each position: a client that
 * disconnects within a position resumes before it and receives the whole position again, never
 * misses one of its events.
 */
export function streamFrames<E extends EventRecord & { chain_pos: number | string }>(events: E[], types: Set<string> | null): { event: E; id: number | null }[] {
  const sent = types ? events.filter((e) => types.has(e.event_type)) : events;
  return sent.map((event, i) => {
    const pos = Number(event.chain_pos);
    const last = i === sent.length - 1 || Number(sent[i + 1].chain_pos) !== pos;
    return { event, id: last ? pos : null };
  });
}
