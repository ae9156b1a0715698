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
  /** After this instant the key no longer authenticates (null: never expires). */
  expires_at: Date | null;
  /** Who created it (`user:<id>`, `api_key:<id>`; null: the CLI or before issue 16). */
  created_by: string | null;
}

/** Key format: `tg_<scope>_<40 base62 chars>` (≈238 bits of randomness). */
export const API_KEY_PATTERN = /^tg_(client|admin)_[0-9A-Za-z]{40}$/;

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

export async function createApiKey(
  db: Queryable,
  input: { projectId: string; scope: KeyScope; name?: string; expiresAt?: Date | null; createdBy?: string | null },
): Promise<{ record: ApiKeyRecord; key: string }> {
  const key = `tg_${input.scope}_${randomBase62(40)}`;
  const { rows } = await db.query<ApiKeyRecord>(
    `INSERT INTO api_keys (id, project_id, name, scope, key_prefix, key_hash, expires_at, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     RETURNING id, project_id, name, scope, key_prefix, created_at, revoked_at, expires_at, created_by`,
    [newId('key'), input.projectId, input.name ?? null, input.scope, key.slice(0, 14), hashApiKey(key), input.expiresAt ?? null, input.createdBy ?? null],
  );
  return { record: rows[0], key };
}

export async function findApiKeyByKey(db: Queryable, key: string): Promise<ApiKeyRecord | null> {
  const { rows } = await db.query<ApiKeyRecord>(
    `SELECT id, project_id, name, scope, key_prefix, created_at, revoked_at, expires_at, created_by FROM api_keys WHERE key_hash = $1`,
    [hashApiKey(key)],
  );
  return rows[0] ?? null;
}

/** The key and its project's plan in one round trip: what authentication needs on every request. */
export async function findApiKeyWithPlan(db: Queryable, key: string): Promise<(ApiKeyRecord & { plan: Plan }) | null> {
  const { rows } = await db.query<ApiKeyRecord & { plan: Plan }>(
    `SELECT k.id, k.project_id, k.name, k.scope, k.key_prefix, k.created_at, k.revoked_at, k.expires_at, k.created_by, p.plan
     FROM api_keys k JOIN projects p ON p.id = k.project_id WHERE k.key_hash = $1`,
    [hashApiKey(key)],
  );
  return rows[0] ?? null;
}

export async function revokeApiKey(db: Queryable, keyId: string): Promise<ApiKeyRecord | null> {
  const { rows } = await db.query<ApiKeyRecord>(
    `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1
     RETURNING id, project_id, name, scope, key_prefix, created_at, revoked_at, expires_at, created_by`,
    [keyId],
  );
  return rows[0] ?? null;
}

export async function listApiKeys(db: Queryable, projectId: string): Promise<ApiKeyRecord[]> {
  const { rows } = await db.query<ApiKeyRecord>(
    `SELECT id, project_id, name, scope, key_prefix, created_at, revoked_at, expires_at, created_by FROM api_keys
     WHERE project_id = $1 ORDER BY created_at`,
    [projectId],
  );
  return rows;
}

/** A project's keys, oldest first, after the (created_at, id) cursor when given (management listing). */
export async function pageApiKeys(
  db: Queryable,
  input: { projectId: string; limit: number; after?: { createdAt: string; id: string } },
): Promise<ApiKeyRecord[]> {
  const { rows } = await db.query<ApiKeyRecord>(
    `SELECT id, project_id, name, scope, key_prefix, created_at, revoked_at, expires_at, created_by FROM api_keys
      WHERE project_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) > ($2::timestamptz, $3::text))
      ORDER BY created_at, id LIMIT $4`,
    [input.projectId, input.after?.createdAt ?? null, input.after?.id ?? null, input.limit],
  );
  return rows;
}
