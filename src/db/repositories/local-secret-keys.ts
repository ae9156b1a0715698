/** Locally generated keys (table local_secret_keys): development and test only, see src/crypto/secret-box.ts. */
import type { Queryable } from '../pool';

/** The key for `purpose`, created once (concurrent first uses keep the first). */
export async function loadOrCreateLocalKey(db: Queryable, purpose: string, generate: () => Buffer): Promise<Buffer> {
  await db.query('INSERT INTO local_secret_keys (purpose, key) VALUES ($1, $2) ON CONFLICT DO NOTHING', [purpose, generate()]);
  const { rows } = await db.query<{ key: Buffer }>('SELECT key FROM local_secret_keys WHERE purpose = $1', [purpose]);
  return rows[0].key;
}
