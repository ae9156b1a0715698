/** Stored signing keys (table integrity_keys): one per purpose, created once, never rotated in place. */
import type { Queryable } from '../pool';

export interface StoredSigningKey {
  private_key_der: Buffer;
  created_at: Date;
}

export async function findSigningKey(db: Queryable, purpose: string): Promise<StoredSigningKey | null> {
  const { rows } = await db.query<StoredSigningKey>('SELECT private_key_der, created_at FROM integrity_keys WHERE purpose = $1', [purpose]);
  return rows[0] ?? null;
}

/** Stores a key for `purpose` unless one exists (concurrent first starts keep the first). */
export async function insertSigningKeyIfAbsent(db: Queryable, k: { kid: string; purpose: string; publicKeyDer: Buffer; privateKeyDer: Buffer }): Promise<void> {
  await db.query(
    `INSERT INTO integrity_keys (kid, purpose, algorithm, public_key_der, private_key_der)
     VALUES ($1, $2, 'Ed25519', $3, $4) ON CONFLICT DO NOTHING`,
    [k.kid, k.purpose, k.publicKeyDer, k.privateKeyDer],
  );
}
