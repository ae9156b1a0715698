/** Projects' own provider keys, envelope-encrypted (table project_provider_keys; src/crypto/envelope.ts). */
import type { Queryable } from '../pool';

export interface ProviderKeyRow {
  project_id: string;
  provider: string;
  kek_id: string;
  wrapped_key: Buffer;
  ciphertext: Buffer;
  last_four: string;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
  last_test_at: Date | null;
  last_test_status: 'ok' | 'failed' | null;
  last_test_error: string | null;
}

export async function upsertProviderKey(
  db: Queryable,
  input: { projectId: string; provider: string; kekId: string; wrappedKey: Buffer; ciphertext: Buffer; lastFour: string; createdBy: string },
): Promise<ProviderKeyRow> {
  const { rows } = await db.query<ProviderKeyRow>(
    `INSERT INTO project_provider_keys (project_id, provider, kek_id, wrapped_key, ciphertext, last_four, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (project_id, provider) DO UPDATE SET kek_id = EXCLUDED.kek_id, wrapped_key = EXCLUDED.wrapped_key,
       ciphertext = EXCLUDED.ciphertext, last_four = EXCLUDED.last_four, created_by = EXCLUDED.created_by,
       updated_at = now(), last_test_at = NULL, last_test_status = NULL, last_test_error = NULL
     RETURNING *`,
    [input.projectId, input.provider, input.kekId, input.wrappedKey, input.ciphertext, input.lastFour, input.createdBy],
  );
  return rows[0];
}

export async function listProviderKeys(db: Queryable, projectId: string): Promise<ProviderKeyRow[]> {
  const { rows } = await db.query<ProviderKeyRow>('SELECT * FROM project_provider_keys WHERE project_id = $1 ORDER BY provider', [projectId]);
  return rows;
}

export async function findProviderKey(db: Queryable, projectId: string, provider: string): Promise<ProviderKeyRow | null> {
  const { rows } = await db.query<ProviderKeyRow>('SELECT * FROM project_provider_keys WHERE project_id = $1 AND provider = $2', [projectId, provider]);
  return rows[0] ?? null;
}

export async function deleteProviderKey(db: Queryable, projectId: string, provider: string): Promise<boolean> {
  const res = await db.query('DELETE FROM project_provider_keys WHERE project_id = $1 AND provider = $2', [projectId, provider]);
  return (res.rowCount ?? 0) > 0;
}

export async function recordProviderKeyTest(db: Queryable, input: { projectId: string; provider: string; ok: boolean; error: string | null }): Promise<ProviderKeyRow | null> {
  const { rows } = await db.query<ProviderKeyRow>(
    `UPDATE project_provider_keys SET last_test_at = now(), last_test_status = $3, last_test_error = $4
      WHERE project_id = $1 AND provider = $2 RETURNING *`,
    [input.projectId, input.provider, input.ok ? 'ok' : 'failed', input.error],
  );
  return rows[0] ?? null;
}

/** Rows wrapped by a known KEK other than `activeKid` (rotation), a batch at a time. */
export async function providerKeysNotUnder(db: Queryable, activeKid: string, knownKids: string[], limit: number): Promise<ProviderKeyRow[]> {
  const { rows } = await db.query<ProviderKeyRow>(
    'SELECT * FROM project_provider_keys WHERE kek_id <> $1 AND kek_id = ANY($2::text[]) ORDER BY project_id, provider LIMIT $3',
    [activeKid, knownKids, limit],
  );
  return rows;
}

/** Rows wrapped by a KEK the keyring does not hold (they cannot be opened or re-wrapped). */
export async function countProviderKeysUnknownKek(db: Queryable, knownKids: string[]): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM project_provider_keys WHERE NOT (kek_id = ANY($1::text[]))', [knownKids]);
  return rows[0].n;
}

/** Replaces the wrapped data key only if the row still holds what was read (a concurrent PUT wins). */
export async function rewrapProviderKey(
  db: Queryable,
  input: { projectId: string; provider: string; fromKid: string; fromWrapped: Buffer; kekId: string; wrappedKey: Buffer },
): Promise<boolean> {
  const res = await db.query(
    `UPDATE project_provider_keys SET kek_id = $5, wrapped_key = $6
      WHERE project_id = $1 AND provider = $2 AND kek_id = $3 AND wrapped_key = $4`,
    [input.projectId, input.provider, input.fromKid, input.fromWrapped, input.kekId, input.wrappedKey],
  );
  return (res.rowCount ?? 0) > 0;
}
