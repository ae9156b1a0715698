/** A session's events in insertion order (its SSE stream reads them by `seq`). */
import type { Queryable } from '../pool';
import type { EventRecord } from '../../events/types';

/** Events read per statement; the stream reads again for the next ones. */
const PAGE = 200;

export async function listSessionEventsAfter(db: Queryable, projectId: string, sessionId: string, afterSeq: number): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    'SELECT * FROM events_chained WHERE project_id = $1 AND session_id = $2 AND seq > $3 ORDER BY seq LIMIT $4',
    [projectId, sessionId, afterSeq, PAGE],
  );
  return rows;
}
