/** A session's events in insertion order (its SSE stream reads them by `seq`). */
import type { Queryable } from '../pool';
import type { EventRecord } from '../../events/types';

export async function listSessionEventsAfter(db: Queryable, projectId: string, sessionId: string, afterSeq: number, limit = 200): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    'SELECT * FROM events_chained WHERE project_id = $1 AND session_id = $2 AND seq > $3 ORDER BY seq LIMIT $4',
    [projectId, sessionId, afterSeq, limit],
  );
  return rows;
}
