/**
 * The batcher of the governed-call statements (src/pipeline/batcher.ts) against real PostgreSQL:
 * calls submitted together share one statement, a busy lane sends its next batch on the connection
 * it holds, a failing batch is retried call by call, and a lane whose connection dies takes another.
 */
import { Worker } from 'node:worker_threads';
import type { Db, Queryable } from '../../../src/db/pool';
import { createProjectBatcher } from '../../../src/pipeline/batcher';
import { testPool } from '../../unit/governance/helpers';
import { waitUntil } from '../../support/wait';

interface Answer {
  value: number;
  pid: number;
  batchSize: number;
}

/** The channel a statement with a `signal` item notifies once it has run. */
const SIGNAL_CHANNEL = `batcher_test_${process.pid}`;

/** 100 / x per item, with the backend that computed it; x = 0 fails the whole statement. */
async function divide(db: Queryable, items: { x: number; sleepMs?: number; signal?: boolean }[]): Promise<Answer[]> {
  const sleep = Math.max(0, ...items.map((i) => i.sleepMs ?? 0)) / 1000;
  const { rows } = await db.query<{ pid: number; values: number[] }>(
    `SELECT pg_backend_pid() AS pid, array_agg(100 / u.x ORDER BY u.o) AS values, pg_sleep($2) IS NULL AS slept,
            CASE WHEN $3 THEN pg_notify($4, '') END AS signalled
       FROM unnest($1::int[]) WITH ORDINALITY AS u(x, o)`,
    [items.map((i) => i.x), sleep, items.some((i) => i.signal), SIGNAL_CHANNEL],
  );
  return rows[0].values.map((value) => ({ value, pid: rows[0].pid, batchSize: items.length }));
}

/**
 * A listener on SIGNAL_CHANNEL in a worker thread: `blockUntilSignal` blocks this thread, as a
 * caller's synchronous work would, until a signalling statement has run. Nothing this thread would
 * send can reach PostgreSQL meanwhile, so it returns false (after `timeoutMs`) for a statement that
 * was not sent before the block.
 */
async function signalListener(): Promise<{ blockUntilSignal(timeoutMs: number): boolean; close(): Promise<number> }> {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const { Client } = require('pg');
     const client = new Client({ connectionString: workerData.url });
     client.on('notification', () => { Atomics.store(workerData.flag, 0, 1); Atomics.notify(workerData.flag, 0); });
     client.connect().then(() => client.query('LISTEN ' + workerData.channel)).then(() => parentPort.postMessage('listening'));`,
    { eval: true, workerData: { flag, url: process.env.DATABASE_URL, channel: SIGNAL_CHANNEL } },
  );
  await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    blockUntilSignal: (timeoutMs) => Atomics.wait(flag, 0, 0, timeoutMs) !== 'timed-out',
    close: () => worker.terminate(),
  };
}

/** The batch statements PostgreSQL is running, once there is one. */
async function activeBatchStatements(db: Db): Promise<{ pid: number }[]> {
  return waitUntil(async () => {
    const { rows } = await db.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_backend_pid() AS pid, array_agg%' AND state = 'active'",
    );
    return rows.length > 0 && rows;
  }, 10_000, 20);
}

describe('project batcher (real PostgreSQL)', () => {
  let db: Db;
  beforeAll(() => {
    db = testPool(4);
  });
  afterAll(async () => {
    await db.end();
  });

  it('puts calls submitted together in one statement, in project order, each answered its own result', async () => {
    const batcher = createProjectBatcher(db, divide);
    const answers = await Promise.all([
      batcher.submit('proj_b', { x: 1 }),
      batcher.submit('proj_a', { x: 2 }),
      batcher.submit('proj_b', { x: 4 }),
      batcher.submit('proj_a', { x: 5 }),
    ]);
    expect(answers.map((a) => a.value)).toEqual([100, 50, 25, 20]);
    expect(new Set(answers.map((a) => a.batchSize))).toEqual(new Set([4]));
  });

  it('sends the batch that queued behind a running one on the same connection, before the callers of the first go on', async () => {
    const batcher = createProjectBatcher(db, divide);
    const listener = await signalListener();
    let ranDuringCallerWork = false;
    try {
      const first = batcher.submit('proj_a', { x: 1, sleepMs: 5000 }).then((answer) => {
        // The caller's own synchronous work after its answer lasts until the queued statement has run
        // (or the wait gives up). Through the pool that statement left only after this work: never.
        ranDuringCallerWork = listener.blockUntilSignal(30_000);
        return answer;
      });
      expect(await activeBatchStatements(db)).toHaveLength(1);
      const queued = [batcher.submit('proj_a', { x: 2, signal: true }), batcher.submit('proj_b', { x: 10 })];
      const [a, b, c] = await Promise.all([first, ...queued]);
      expect([a.batchSize, b.batchSize, c.batchSize]).toEqual([1, 2, 2]);
      expect([b.value, c.value]).toEqual([50, 10]);
      expect(b.pid).toBe(a.pid);
      expect(ranDuringCallerWork).toBe(true);
    } finally {
      await listener.close();
    }
  });

  it('retries a failing batch call by call: only the bad call fails', async () => {
    const batcher = createProjectBatcher(db, divide);
    const results = await Promise.allSettled([
      batcher.submit('proj_a', { x: 1 }),
      batcher.submit('proj_a', { x: 0 }),
      batcher.submit('proj_b', { x: 4 }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[0] as PromiseFulfilledResult<Answer>).value).toMatchObject({ value: 100, batchSize: 1 });
    expect((results[1] as PromiseRejectedResult).reason.message).toMatch(/division by zero/);
    expect((results[2] as PromiseFulfilledResult<Answer>).value).toMatchObject({ value: 25, batchSize: 1 });
  });

  it('takes another connection when the one it holds dies mid-statement, and loses no call', async () => {
    const batcher = createProjectBatcher(db, divide);
    // The first statement sleeps far longer than the test runs, so a stalled machine cannot let it
    // finish before it is killed (it ends at the kill, not after its sleep).
    const first = batcher.submit('proj_a', { x: 1, sleepMs: 30_000 });
    const rows = await activeBatchStatements(db);
    expect(rows).toHaveLength(1);
    const next = batcher.submit('proj_a', { x: 2, sleepMs: 300 });
    await db.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);

    // The killed statement had one call: it fails with the connection's error, as through the pool.
    await expect(first).rejects.toThrow(/terminat/);
    const after = await next;
    expect(after.value).toBe(50);
    expect(after.pid).not.toBe(rows[0].pid);
    const again = await batcher.submit('proj_a', { x: 4 });
    expect(again.value).toBe(25);
    expect(again.pid).not.toBe(rows[0].pid);
  });
});
