/**
 * Timeline events of a session. Every one carries `session_id` and, as `request_id`, the session id
 * itself, so GET /v1/requests/{session_id}/timeline is the session's timeline (its permits are
 * issued with that request id too) and its SSE stream reads them by session id.
 */
import type { NewEvent } from '../events/types';

export const SESSION_EVENT_SOURCE = 'sessions';

export interface SessionRef {
  project_id: string;
  id: string;
  provider: string;
  model: string;
}

export function sessionEvent(
  s: SessionRef,
  eventType: string,
  metadata: Record<string, unknown>,
  opts: { at: Date; permitId?: string | null; phase?: string },
): NewEvent {
  return {
    projectId: s.project_id,
    eventType,
    source: SESSION_EVENT_SOURCE,
    phase: opts.phase ?? 'session',
    provider: s.provider,
    model: s.model,
    permitId: opts.permitId ?? null,
    requestId: s.id,
    sessionId: s.id,
    metadata,
    timestamp: opts.at,
  };
}
