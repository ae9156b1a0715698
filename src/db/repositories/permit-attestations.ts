/** Human attestations of review permits (table permit_attestations). */
import type { Queryable } from '../pool';

export interface AttestationRecord {
  id: string;
  project_id: string;
  permit_id: string;
  child_permit_id: string;
  attested_by: string;
  attested_at: Date;
  reason: string;
  recorded_at: Date;
  recorded_by: string;
}

export async function findAttestation(db: Queryable, projectId: string, permitId: string): Promise<AttestationRecord | null> {
  const { rows } = await db.query<AttestationRecord>(
    'SELECT * FROM permit_attestations WHERE project_id = $1 AND (permit_id = $2 OR child_permit_id = $2)',
    [projectId, permitId],
  );
  return rows[0] ?? null;
}

export async function insertAttestation(db: Queryable, a: AttestationRecord): Promise<void> {
  await db.query(
    `INSERT INTO permit_attestations (id, project_id, permit_id, child_permit_id, attested_by, attested_at, reason, recorded_at, recorded_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [a.id, a.project_id, a.permit_id, a.child_permit_id, a.attested_by, a.attested_at, a.reason, a.recorded_at, a.recorded_by],
  );
}
