import { Pool, PoolClient, types } from 'pg';
import { storableParam } from './text-safety';

// int8 (bigint) columns carry micro-USD amounts and counters; they fit in a JS number far below
// 2^53, so parse them as numbers instead of strings.
types.setTypeParser(20, (v) => Number(v));

export type Db = Pool;

export function createPool(databaseUrl: string, max = 20): Db {
  const pool = new Pool({ connectionString: databaseUrl, max, idleTimeoutMillis: 30000 });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    // Every query of every client (pool.query goes through one) gets storable parameters.
    makeParametersStorable(client);
    // pg-pool listens for errors only while a client is idle. A checked-out client between two
    // queries (inside a transaction, under a key lock) whose connection drops emits 'error' with no
    // listener, which would end the process (found by `npm run chaos`, restarting PostgreSQL). The
    // client's next query fails instead, and release(err) discards it.
    client.on('error', () => undefined);
  });
  return pool;
}

function makeParametersStorable(client: PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const [first, second] = args;
    if (Array.isArray(second)) args[1] = second.map(storableParam);
    else if (first && typeof first === 'object' && typeof (first as { submit?: unknown }).submit === 'function') {
      // A submittable (a pg Query streaming its rows) is the object pg runs: its values are replaced in place.
      const q = first as { values?: unknown[] };
      if (Array.isArray(q.values)) q.values = q.values.map(storableParam);
    } else if (first && typeof first === 'object' && Array.isArray((first as { values?: unknown[] }).values)) {
      args[0] = { ...(first), values: (first as { values: unknown[] }).values.map(storableParam) };
    }
    return query(...args);
  };
}

/**
 * How a long read begins (the rollups', an export's row parts'): read only, and without JIT (the
 * planner's estimates for the rollups' range joins are loose, and a window's rows are many, so a
 * statement's cost passes jit_above_cost and compiling its expressions takes longer than it
 * saves). The snapshot form holds one snapshot for every statement.
 */
export const READ_WITHOUT_JIT = 'BEGIN READ ONLY; SET LOCAL jit = off';
export const SNAPSHOT_READ_WITHOUT_JIT = 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL jit = off';

/** Runs `fn` in a transaction on one client (`begin`: how it begins), committed when `fn` resolves, rolled back when it throws. */
export async function withTransaction<T>(db: Db, fn: (client: PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
  const client = await db.connect();
  try {
    await client.query(begin);
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

/** Whether the database answers a trivial query within `timeoutMs` (readiness). */
export async function databaseAnswers(db: Db, timeoutMs = 2000): Promise<boolean> {
  try {
    await db.query({ text: 'SELECT 1', query_timeout: timeoutMs } as unknown as string);
    return true;
  } catch {
    return false;
  }
}
