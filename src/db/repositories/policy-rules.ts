/** Metadata of addressable policies (table project_policy_rules). */
import type { Queryable } from '../pool';

export interface PolicyRuleMeta {
  project_id: string;
  policy_id: string;
  type: string;
  name: string | null;
  description: string | null;
  template_id: string | null;
  created_at: Date;
  created_by: string;
  updated_at: Date;
  updated_by: string;
  document_version: number;
}

export async function listPolicyRuleMeta(db: Queryable, projectId: string): Promise<PolicyRuleMeta[]> {
  const { rows } = await db.query<PolicyRuleMeta>('SELECT * FROM project_policy_rules WHERE project_id = $1 ORDER BY created_at, policy_id', [projectId]);
  return rows;
}

export async function upsertPolicyRuleMeta(db: Queryable, m: PolicyRuleMeta): Promise<void> {
  await db.query(
    `INSERT INTO project_policy_rules (project_id, policy_id, type, name, description, template_id, created_at, created_by, updated_at, updated_by, document_version)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (project_id, policy_id) DO UPDATE SET type = EXCLUDED.type, name = EXCLUDED.name, description = EXCLUDED.description,
       template_id = EXCLUDED.template_id, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by, document_version = EXCLUDED.document_version`,
    [m.project_id, m.policy_id, m.type, m.name, m.description, m.template_id, m.created_at, m.created_by, m.updated_at, m.updated_by, m.document_version],
  );
}

export async function deletePolicyRuleMeta(db: Queryable, projectId: string, policyId: string): Promise<void> {
  await db.query('DELETE FROM project_policy_rules WHERE project_id = $1 AND policy_id = $2', [projectId, policyId]);
}
