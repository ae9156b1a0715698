import { Pool, PoolClient, types } from 'pg';

// int8 (bigint) columns carry micro-USD amounts and counters; they fit in a JS number far below
// 2^53, so parse them as numbers instead of strings.
types.setTypeParser(20, (v) => Number(v));

export type Db = Pool;

export function createPool(databaseUrl: string, max = 20): Db {
  const pool = new Pool({ connectionString: databaseUrl, max, idleTimeoutMillis: 30000 });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  return pool;
}

/** Runs `fn` in one transaction; rolls back on any error. */
export async function withTransaction<T>(db: Db, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

export type Queryable = Pick<Pool, 'query'> | PoolClient;
