/** Evidence attached to permits (table permit_evidence). */
import type { Queryable } from '../pool';

export interface EvidenceRecord {
  id: string;
  project_id: string;
  permit_id: string;
  type: string;
  description: string | null;
  uri: string | null;
  content_sha256: string | null;
  data: Record<string, unknown> | null;
  submitted_by: string;
  created_at: Date;
}

export async function insertEvidence(db: Queryable, e: EvidenceRecord): Promise<void> {
  await db.query(
    `INSERT INTO permit_evidence (id, project_id, permit_id, type, description, uri, content_sha256, data, submitted_by, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [e.id, e.project_id, e.permit_id, e.type, e.description, e.uri, e.content_sha256, e.data === null ? null : JSON.stringify(e.data), e.submitted_by, e.created_at],
  );
}

export async function listEvidence(db: Queryable, projectId: string, permitId: string): Promise<EvidenceRecord[]> {
  const { rows } = await db.query<EvidenceRecord>(
    'SELECT * FROM permit_evidence WHERE project_id = $1 AND permit_id = $2 ORDER BY created_at, id',
    [projectId, permitId],
  );
  return rows;
}
