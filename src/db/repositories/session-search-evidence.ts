/** Search results attached to sessions (table `session_search_evidence`, migration 0140). */
import type { Queryable } from '../pool';
import { appendEvents } from './events';
import type { NewEvent } from '../../events/types';

export interface SearchResultItem {
  url: string;
  title?: string;
  content_sha256?: string;
  retrieved_at?: string;
  rank?: number;
}

export interface SearchEvidenceRecord {
  id: string;
  project_id: string;
  session_id: string;
  query: string;
  provider: string | null;
  results: SearchResultItem[];
  turn_id: string | null;
  created_at: Date;
}

export async function insertSearchEvidence(db: Queryable, r: SearchEvidenceRecord, event: NewEvent): Promise<SearchEvidenceRecord> {
  const { rows } = await db.query<SearchEvidenceRecord>(
    `INSERT INTO session_search_evidence (id, project_id, session_id, query, provider, results, turn_id, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
    [r.id, r.project_id, r.session_id, r.query, r.provider, JSON.stringify(r.results), r.turn_id, r.created_at],
  );
  await appendEvents(db, [event]);
  return rows[0];
}

export async function findSearchEvidence(db: Queryable, projectId: string, sessionId: string, id: string): Promise<SearchEvidenceRecord | null> {
  const { rows } = await db.query<SearchEvidenceRecord>(
    'SELECT * FROM session_search_evidence WHERE project_id = $1 AND session_id = $2 AND id = $3',
    [projectId, sessionId, id],
  );
  return rows[0] ?? null;
}
