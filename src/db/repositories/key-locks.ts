import type { PoolClient } from 'pg';
import type { Db } from '../pool';

/** Advisory-lock classes of the permit-first API (session locks, see withKeyLock). */
export const LOCK_PERMIT_IDEMPOTENCY = 7407;
export const LOCK_PERMIT_USAGE = 7408;
export const LOCK_POLICY_RULES = 7409;

/** How long a request waits for a key's lock before it fails. */
const LOCK_TIMEOUT_MS = 30_000;

/**
 * Runs `fn` while holding a session advisory lock on (class, key) on a dedicated connection, so
 * requests for the same idempotency key / permit / project are serialised across processes. `fn`
 * uses the pool for its own statements (it may start transactions of its own). Waiters poll with
 * pg_try_advisory_lock and hold no connection while they wait, so many concurrent requests for one
 * key cannot exhaust the pool the holder needs.
 */
export async function withKeyLock<T>(db: Db, lockClass: number, key: string, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + LOCK_TIMEOUT_MS;
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
    if (Date.now() > deadline) throw new Error(`advisory lock ${lockClass}:${key} not acquired within ${LOCK_TIMEOUT_MS} ms`);
    await new Promise((r) => setTimeout(r, Math.min(5 * 2 ** Math.min(attempt, 4), 50) + Math.random() * 5));
  }
}
