import { Queryable } from '../pool';

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export type ClaimResult =
  | { outcome: 'claimed' }
  | { outcome: 'conflict' }
  | { outcome: 'in_flight'; resourceId: string | null }
  | { outcome: 'completed'; resourceId: string | null; response: StoredResponse | null };

interface Row {
  request_hash: string;
  state: 'in_flight' | 'completed';
  resource_id: string | null;
  response_status: number | null;
  response_headers: Record<string, string> | null;
  response_body: Buffer | null;
  inserted: boolean;
}

/**
 * Claims an idempotency key for a request, atomically. The first caller gets `claimed` and must
 * later `completeIdempotencyKey` (or `releaseIdempotencyKey` on failure before any effect). Later
 * callers see the first one's state; a different payload under the same key is a `conflict`.
 * Expired rows are treated as absent and overwritten.
 */
export async function claimIdempotencyKey(
  db: Queryable,
  input: { projectId: string; scope: string; key: string; requestHash: string; resourceId?: string; retentionHours: number },
): Promise<ClaimResult> {
  const { rows } = await db.query<Row>(
    `INSERT INTO idempotency_keys (project_id, scope, key, request_hash, state, resource_id, expires_at)
     VALUES ($1, $2, $3, $4, 'in_flight', $5, now() + make_interval(hours => $6))
     ON CONFLICT (project_id, scope, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, state = 'in_flight', resource_id = EXCLUDED.resource_id,
           response_status = NULL, response_headers = NULL, response_body = NULL,
           created_at = now(), completed_at = NULL, expires_at = EXCLUDED.expires_at
       WHERE idempotency_keys.expires_at <= now()
     RETURNING request_hash, state, resource_id, response_status, response_headers, response_body, true AS inserted`,
    [input.projectId, input.scope, input.key, input.requestHash, input.resourceId ?? null, input.retentionHours],
  );
  if (rows.length > 0) return { outcome: 'claimed' };
  const existing = await db.query<Row>(
    `SELECT request_hash, state, resource_id, response_status, response_headers, response_body, false AS inserted
     FROM idempotency_keys WHERE project_id = $1 AND scope = $2 AND key = $3`,
    [input.projectId, input.scope, input.key],
  );
  const row = existing.rows[0];
  if (!row) return claimIdempotencyKey(db, input); // expired row purged between the two statements
  if (row.request_hash !== input.requestHash) return { outcome: 'conflict' };
  if (row.state === 'in_flight') return { outcome: 'in_flight', resourceId: row.resource_id };
  return {
    outcome: 'completed',
    resourceId: row.resource_id,
    response:
      row.response_status === null
        ? null
        : { status: row.response_status, headers: row.response_headers ?? {}, body: row.response_body ?? Buffer.alloc(0) },
  };
}

export async function completeIdempotencyKey(
  db: Queryable,
  input: { projectId: string; scope: string; key: string; resourceId?: string | null; response?: StoredResponse },
): Promise<void> {
  await db.query(
    `UPDATE idempotency_keys
     SET state = 'completed', completed_at = now(), resource_id = COALESCE($4, resource_id),
         response_status = $5, response_headers = $6, response_body = $7
     WHERE project_id = $1 AND scope = $2 AND key = $3`,
    [
      input.projectId,
      input.scope,
      input.key,
      input.resourceId ?? null,
      input.response?.status ?? null,
      input.response ? JSON.stringify(input.response.headers) : null,
      input.response?.body ?? null,
    ],
  );
}

/** Forgets an in-flight claim whose request failed before any effect, so a retry can run. */
export async function releaseIdempotencyKey(db: Queryable, input: { projectId: string; scope: string; key: string }): Promise<void> {
  await db.query(
    `DELETE FROM idempotency_keys WHERE project_id = $1 AND scope = $2 AND key = $3 AND state = 'in_flight'`,
    [input.projectId, input.scope, input.key],
  );
}

/** Deletes keys past their retention window; returns how many were removed. */
export async function purgeExpiredIdempotencyKeys(db: Queryable, now: Date, batchSize = 5000): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys WHERE ctid IN (
       SELECT ctid FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2)`,
    [now, batchSize],
  );
  return rowCount ?? 0;
}
