import type { PoolClient } from 'pg';
import { Db, Queryable } from '../pool';
import type { PermitRecord } from './permits';

/**
 * Queries of the permit-first API (issue 7) over the governance tables, plus its own tables:
 * usage closeouts, attestations, evidence and the metadata of addressable policies.
 */

/** Advisory-lock classes of the permit-first API (session locks, see withKeyLock). */
export const LOCK_PERMIT_IDEMPOTENCY = 7407;
export const LOCK_PERMIT_USAGE = 7408;
export const LOCK_POLICY_RULES = 7409;

/**
 * Runs `fn` while holding a session advisory lock on (class, key) on a dedicated connection, so
 * requests for the same idempotency key / permit / project are serialised across processes. `fn`
 * uses the pool for its own statements (it may start transactions of its own). Waiters poll with
 * pg_try_advisory_lock and hold no connection while they wait, so many concurrent requests for one
 * key cannot exhaust the pool the holder needs.
 */
export async function withKeyLock<T>(db: Db, lockClass: number, key: string, fn: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    const client: PoolClient = await db.connect();
    let locked = false;
    try {
      const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS ok', [lockClass, key]);
      locked = rows[0].ok;
      if (locked) return await fn();
    } finally {
      if (locked) await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [lockClass, key]).catch(() => undefined);
      client.release();
    }
    if (Date.now() > deadline) throw new Error(`advisory lock ${lockClass}:${key} not acquired within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, Math.min(5 * 2 ** Math.min(attempt, 4), 50) + Math.random() * 5));
  }
}

/** The newest permit issued under an idempotency key (the root holds the column, revalidations the metadata). */
export async function findPermitHeadByIdempotencyKey(db: Queryable, projectId: string, key: string): Promise<PermitRecord | null> {
  const { rows } = await db.query<PermitRecord>(
    `SELECT * FROM permits
      WHERE project_id = $1 AND (idempotency_key = $2 OR (metadata ? 'idempotency_key' AND metadata->>'idempotency_key' = $2))
      ORDER BY issued_at DESC, id DESC LIMIT 1`,
    [projectId, key],
  );
  return rows[0] ?? null;
}

/** Permits issued in [from, to), oldest first, for the export stream (keyset pages). */
export async function listPermitsForExport(
  db: Queryable,
  projectId: string,
  window: { from: Date; to: Date },
  after: { issuedAt: Date; id: string } | null,
  limit: number,
): Promise<PermitRecord[]> {
  const params: unknown[] = [projectId, window.from, window.to, limit];
  let keyset = '';
  if (after) {
    params.push(after.issuedAt, after.id);
    keyset = 'AND (issued_at, id) > ($5, $6)';
  }
  const { rows } = await db.query<PermitRecord>(
    `SELECT * FROM permits WHERE project_id = $1 AND issued_at >= $2 AND issued_at < $3 ${keyset}
      ORDER BY issued_at, id LIMIT $4`,
    params,
  );
  return rows;
}

export async function countProjectRows(db: Queryable, projectId: string): Promise<{ permits: number; events: number }> {
  const { rows } = await db.query<{ permits: number; events: number }>(
    `SELECT (SELECT count(*) FROM permits WHERE project_id = $1)::int AS permits,
            (SELECT count(*) FROM events WHERE project_id = $1)::int AS events`,
    [projectId],
  );
  return rows[0];
}

// ---- usage closeouts ----

export interface UsageReportRecord {
  permit_id: string;
  project_id: string;
  usage_idempotency_key: string;
  request_hash: string;
  status: 'completed' | 'failed';
  input_tokens: number;
  output_tokens: number;
  billed_cost_micros: number;
  verification: Record<string, unknown> | null;
  error: Record<string, unknown> | null;
  occurred_at: Date | null;
  reported_at: Date;
  reported_by: string;
  response: Record<string, unknown>;
}

export async function findUsageReport(db: Queryable, projectId: string, permitId: string): Promise<UsageReportRecord | null> {
  const { rows } = await db.query<UsageReportRecord>('SELECT * FROM permit_usage_reports WHERE project_id = $1 AND permit_id = $2', [projectId, permitId]);
  return rows[0] ?? null;
}

export async function listUsageReports(db: Queryable, projectId: string, permitIds: string[]): Promise<UsageReportRecord[]> {
  if (permitIds.length === 0) return [];
  const { rows } = await db.query<UsageReportRecord>(
    'SELECT * FROM permit_usage_reports WHERE project_id = $1 AND permit_id = ANY($2::text[]) ORDER BY reported_at',
    [projectId, permitIds],
  );
  return rows;
}

export async function insertUsageReport(db: Queryable, r: UsageReportRecord): Promise<void> {
  await db.query(
    `INSERT INTO permit_usage_reports (permit_id, project_id, usage_idempotency_key, request_hash, status, input_tokens, output_tokens,
       billed_cost_micros, verification, error, occurred_at, reported_at, reported_by, response)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
    [
      r.permit_id, r.project_id, r.usage_idempotency_key, r.request_hash, r.status, r.input_tokens, r.output_tokens, r.billed_cost_micros,
      r.verification === null ? null : JSON.stringify(r.verification), r.error === null ? null : JSON.stringify(r.error),
      r.occurred_at, r.reported_at, r.reported_by, JSON.stringify(r.response),
    ],
  );
}

// ---- attestations ----

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

// ---- evidence ----

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

// ---- addressable policies ----

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

/** Events of several permits, in chain order. */
export async function listEventsForPermits(db: Queryable, projectId: string, permitIds: string[]): Promise<import('./events').EventRecord[]> {
  if (permitIds.length === 0) return [];
  const { rows } = await db.query<import('./events').EventRecord>(
    'SELECT * FROM events_chained WHERE project_id = $1 AND permit_id = ANY($2::text[]) ORDER BY seq',
    [projectId, permitIds],
  );
  return rows;
}

/** Every permit descending from `permitId` via parent_permit_id (revalidations, attestations), oldest first. */
export async function listDescendantPermits(db: Queryable, projectId: string, permitId: string): Promise<PermitRecord[]> {
  const { rows } = await db.query<PermitRecord & { depth?: number }>(
    `WITH RECURSIVE tree AS (
       SELECT p.*, 1 AS depth FROM permits p WHERE p.project_id = $1 AND p.parent_permit_id = $2
       UNION ALL
       SELECT p.*, t.depth + 1 FROM permits p JOIN tree t ON p.parent_permit_id = t.id WHERE t.depth < 100 AND p.project_id = $1
     ) SELECT * FROM tree ORDER BY issued_at, id`,
    [projectId, permitId],
  );
  return rows.map(({ depth: _d, ...r }) => r);
}
