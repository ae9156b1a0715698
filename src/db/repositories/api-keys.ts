import { createHash } from 'node:crypto';
import { Queryable } from '../pool';
import { newId, randomBase62 } from '../../ids';
import type { Plan } from './projects';

export type KeyScope = 'client' | 'admin';
export const KEY_SCOPES: readonly KeyScope[] = ['client', 'admin'];

export interface ApiKeyRecord {
  id: string;
  project_id: string;
  name: string | null;
  scope: KeyScope;
  key_prefix: string;
  created_at: Date;
  revoked_at: Date | null;
}

/** Key format: `tg_<scope>_<40 base62 chars>` (≈238 bits of randomness). */
export const API_KEY_PATTERN = /^tg_(client|admin)_[0-9A-Za-z]{40}$/;

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

export async function createApiKey(
  db: Queryable,
  input: { projectId: string; scope: KeyScope; name?: string },
): Promise<{ record: ApiKeyRecord; key: string }> {
  const key = `tg_${input.scope}_${randomBase62(40)}`;
  const { rows } = await db.query<ApiKeyRecord>(
    `INSERT INTO api_keys (id, project_id, name, scope, key_prefix, key_hash)
     VALUES ($1, $2, $3, $4, $5, $6)
     RETURNING id, project_id, name, scope, key_prefix, created_at, revoked_at`,
    [newId('key'), input.projectId, input.name ?? null, input.scope, key.slice(0, 14), hashApiKey(key)],
  );
  return { record: rows[0], key };
}

export async function findApiKeyByKey(db: Queryable, key: string): Promise<ApiKeyRecord | null> {
  const { rows } = await db.query<ApiKeyRecord>(
    `SELECT id, project_id, name, scope, key_prefix, created_at, revoked_at FROM api_keys WHERE key_hash = $1`,
    [hashApiKey(key)],
  );
  return rows[0] ?? null;
}

/** The key and its project's plan in one round trip: what authentication needs on every request. */
export async function findApiKeyWithPlan(db: Queryable, key: string): Promise<(ApiKeyRecord & { plan: Plan }) | null> {
  const { rows } = await db.query<ApiKeyRecord & { plan: Plan }>(
    `SELECT k.id, k.project_id, k.name, k.scope, k.key_prefix, k.created_at, k.revoked_at, p.plan
     FROM api_keys k JOIN projects p ON p.id = k.project_id WHERE k.key_hash = $1`,
    [hashApiKey(key)],
  );
  return rows[0] ?? null;
}

export async function revokeApiKey(db: Queryable, keyId: string): Promise<ApiKeyRecord | null> {
  const { rows } = await db.query<ApiKeyRecord>(
    `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1
     RETURNING id, project_id, name, scope, key_prefix, created_at, revoked_at`,
    [keyId],
  );
  return rows[0] ?? null;
}

export async function listApiKeys(db: Queryable, projectId: string): Promise<ApiKeyRecord[]> {
  const { rows } = await db.query<ApiKeyRecord>(
    `SELECT id, project_id, name, scope, key_prefix, created_at, revoked_at FROM api_keys
     WHERE project_id = $1 ORDER BY created_at`,
    [projectId],
  );
  return rows;
}
