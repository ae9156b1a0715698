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
