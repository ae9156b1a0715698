import type { EventRecord } from './types';
import type { LogEvent } from './merge';

/** The spec's timeline event: persisted columns only. */
export function timelineEventView(e: EventRecord) {
  return {
    timestamp: new Date(e.timestamp).toISOString(),
    event_type: e.event_type,
    source: e.source,
    phase: e.phase,
    provider: e.provider,
    model: e.model,
    permit_id: e.permit_id,
    request_id: e.request_id,
    job_id: e.job_id,
    session_id: e.session_id,
    metadata: e.metadata ?? {},
  };
}

/**
 * A governance event as the API shows it (docs/decisions/governance-event-log.md): the persisted
 * columns, the event's id and its place in the project's log. `position` is the chain position
 * (1, 2, 3, … per project; the Merkle leaf index is position − 1), null for the fraction of a
 * second before the sequencer chains the event; `chain` carries the hash-chain links. An event
 * derived from a call record has no hash of its own: its position and links are its record's, the
 * leaf that holds it (`chain.seq` is then the record's seq).
 */
export function governanceEventView(e: LogEvent) {
  const position = e.chain_pos === null || e.chain_pos === undefined ? null : Number(e.chain_pos);
  const link = e.derived_from ? e.link ?? null : { seq: Number(e.seq), prev_hash: e.prev_hash, hash: e.hash };
  return {
    id: e.id,
    object: 'governance_event' as const,
    position,
    ...timelineEventView(e),
    chain: position === null || link === null ? null : link,
  };
}
