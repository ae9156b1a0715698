import type { EventRecord } from '../db/repositories/events';

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
