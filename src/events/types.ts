/** An event of a project's log: as written (`NewEvent`) and as stored with its chain position (`EventRecord`). */
export interface NewEvent {
  projectId: string;
  eventType: string;
  source: string;
  phase: string;
  provider?: string | null;
  model?: string | null;
  permitId?: string | null;
  requestId?: string | null;
  jobId?: string | null;
  sessionId?: string | null;
  metadata?: Record<string, unknown>;
  timestamp?: Date;
}

export interface EventRecord {
  seq: number;
  id: string;
  project_id: string;
  timestamp: Date;
  event_type: string;
  source: string;
  phase: string;
  provider: string | null;
  model: string | null;
  permit_id: string | null;
  request_id: string | null;
  job_id: string | null;
  session_id: string | null;
  metadata: Record<string, unknown>;
  /** Null until the sequencer chains the event. */
  prev_hash: string | null;
  hash: string | null;
  chain_pos?: number | null;
}

/** The row columns a written event fills as it was written; its id, project, time and place in the chain are the writer's. */
export type EventColumns = Pick<EventRecord, 'event_type' | 'source' | 'phase' | 'provider' | 'model' | 'permit_id' | 'request_id' | 'job_id' | 'session_id' | 'metadata'>;

/** `NewEvent`'s members as the columns of its row (an absent one is null). */
export function eventColumns(e: NewEvent): EventColumns {
  return {
    event_type: e.eventType,
    source: e.source,
    phase: e.phase,
    provider: e.provider ?? null,
    model: e.model ?? null,
    permit_id: e.permitId ?? null,
    request_id: e.requestId ?? null,
    job_id: e.jobId ?? null,
    session_id: e.sessionId ?? null,
    metadata: e.metadata ?? {},
  };
}
