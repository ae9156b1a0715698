import { Db, Queryable, withTransaction } from '../pool';
import { appendEvent } from './events';
import { defaultPolicyDocument, mergePatch, PolicyDocument, policyDocumentSchema } from '../../governance/policy';
import type { z } from 'zod';

export interface StoredPolicy {
  project_id: string;
  /** 0 while the project runs on the defaults (never changed). */
  version: number;
  document: PolicyDocument;
  updated_at: Date | null;
  updated_by: string | null;
}

/** The project's current policy; the defaults (version 0) when none was ever stored. */
export async function getPolicy(db: Queryable, projectId: string): Promise<StoredPolicy> {
  const { rows } = await db.query<{ version: number; document: unknown; updated_at: Date; updated_by: string | null }>(
    'SELECT version, document, updated_at, updated_by FROM project_policies WHERE project_id = $1',
    [projectId],
  );
  if (!rows[0]) return { project_id: projectId, version: 0, document: defaultPolicyDocument(), updated_at: null, updated_by: null };
  // Re-parse: documents stored by an older schema get today's defaults for new fields.
  const parsed = policyDocumentSchema.safeParse(rows[0].document);
  return {
    project_id: projectId,
    version: rows[0].version,
    document: parsed.success ? parsed.data : defaultPolicyDocument(),
    updated_at: rows[0].updated_at,
    updated_by: rows[0].updated_by,
  };
}

/** Stored versions of the project's policy, newest first (version 0, the defaults, is never stored). */
export async function listPolicyVersions(db: Queryable, projectId: string, limit: number): Promise<StoredPolicy[]> {
  const { rows } = await db.query<{ version: number; document: PolicyDocument; updated_at: Date; updated_by: string | null }>(
    'SELECT version, document, updated_at, updated_by FROM project_policy_versions WHERE project_id = $1 ORDER BY version DESC LIMIT $2',
    [projectId, limit],
  );
  return rows.map((r) => ({ project_id: projectId, ...r }));
}

export class PolicyValidationError extends Error {
  constructor(readonly zodError: z.ZodError) {
    super('invalid policy document');
  }
}

/**
 * Applies an RFC 7396 merge patch (`mode: 'merge'`) or replaces the document (`mode: 'replace'`),
 * validates the result, stores it as version + 1 (history kept in project_policy_versions) and
 * appends a `policy.updated` event, all in one transaction serialised per project.
 */
export async function updatePolicy(
  db: Db,
  input: { projectId: string; patch: unknown; mode: 'merge' | 'replace'; updatedBy: string; now: Date },
): Promise<StoredPolicy> {
  return withTransaction(db, async (c) => {
    // Same lock the governance engine holds while evaluating, so a decision sees one policy version.
    await c.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [GOVERNANCE_LOCK_CLASS, input.projectId]);
    const current = await getPolicy(c, input.projectId);
    const candidate = input.mode === 'merge' ? mergePatch(current.document, input.patch) : input.patch;
    const parsed = policyDocumentSchema.safeParse(candidate);
    if (!parsed.success) throw new PolicyValidationError(parsed.error);
    const version = current.version + 1;
    await c.query(
      `INSERT INTO project_policies (project_id, version, document, updated_at, updated_by) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (project_id) DO UPDATE SET version = EXCLUDED.version, document = EXCLUDED.document,
         updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by`,
      [input.projectId, version, JSON.stringify(parsed.data), input.now, input.updatedBy],
    );
    await c.query(
      'INSERT INTO project_policy_versions (project_id, version, document, updated_at, updated_by) VALUES ($1, $2, $3, $4, $5)',
      [input.projectId, version, JSON.stringify(parsed.data), input.now, input.updatedBy],
    );
    const changed = Object.keys(parsed.data).filter(
      (k) => JSON.stringify((parsed.data as Record<string, unknown>)[k]) !== JSON.stringify((current.document as Record<string, unknown>)[k]),
    );
    await appendEvent(c, {
      projectId: input.projectId,
      eventType: 'policy.updated',
      source: 'policies',
      phase: 'policy',
      timestamp: input.now,
      metadata: { version, previous_version: current.version, changed_sections: changed, updated_by: input.updatedBy },
    });
    return { project_id: input.projectId, version, document: parsed.data, updated_at: input.now, updated_by: input.updatedBy };
  });
}

/** Class id of the two-key advisory lock serialising governance decisions per project. */
export const GOVERNANCE_LOCK_CLASS = 7401;

/** Takes a project's governance lock for the rest of the caller's transaction. */
export async function lockProjectGovernance(q: Queryable, projectId: string): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [GOVERNANCE_LOCK_CLASS, projectId]);
}
