/**
 * The stored rows of the governance event log (GET /v1/governance/events…), through the existing
 * events indexes ((project_id, seq), (project_id, request_id, seq), (project_id, permit_id, seq)).
 * Readers see them merged with the events derived from call records (src/db/repositories/log-events.ts).
 */
import type { Queryable } from '../pool';
import type { EventRecord } from '../../events/types';

export interface GovernanceEventFilter {
  eventTypes?: string[];
  since?: Date;
  until?: Date;
  requestId?: string;
  permitId?: string;
}

/** One page of stored rows, by seq (the insertion order; chain order differs only for events chained in the same round). */
export async function listGovernanceEvents(
  db: Queryable,
  projectId: string,
  f: GovernanceEventFilter & { order: 'asc' | 'desc'; afterSeq?: number; limit: number },
): Promise<EventRecord[]> {
  const dir = f.order === 'asc' ? 'ASC' : 'DESC';
  const cmp = f.order === 'asc' ? '>' : '<';
  const { rows } = await db.query<EventRecord>(
    `SELECT * FROM events_chained
      WHERE project_id = $1
        AND ($2::bigint IS NULL OR seq ${cmp} $2)
        AND ($3::text[] IS NULL OR event_type = ANY($3))
        AND ($4::timestamptz IS NULL OR timestamp >= $4)
        AND ($5::timestamptz IS NULL OR timestamp < $5)
        AND ($6::text IS NULL OR request_id = $6)
        AND ($7::text IS NULL OR permit_id = $7)
      ORDER BY seq ${dir} LIMIT $8`,
    [projectId, f.afterSeq ?? null, f.eventTypes ?? null, f.since ?? null, f.until ?? null, f.requestId ?? null, f.permitId ?? null, f.limit],
  );
  return rows;
}

/** A stored event by id (a derived event's id names its record: log-events.ts's findLogEvent). */
export async function findGovernanceEvent(db: Queryable, projectId: string, eventId: string): Promise<EventRecord | null> {
  const { rows } = await db.query<EventRecord>('SELECT * FROM events_chained WHERE id = $1 AND project_id = $2', [eventId, projectId]);
  return rows[0] ?? null;
}
