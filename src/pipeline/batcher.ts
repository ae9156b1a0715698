/**
 * Batching of the statements that take projects' governance locks in PostgreSQL
 * (tollgate_govern_calls, tollgate_record_calls). At most one such statement is in flight from this
 * process; calls that arrive meanwhile go together in the next one, sorted by project (stable, so
 * each project's calls keep their order, and every batch locks projects in the same order).
 * Without it, 32 concurrent calls of one project park 32 backends on the same advisory lock and
 * the holder competes with them for CPU (a lock convoy: 79 calls/s measured on 2 cores), and 32
 * projects pay 32 commits; with it, locks and one commit are shared by a batch. If a batch fails,
 * its items are retried one by one, so one bad call never fails the others.
 *
 * While the lane has work it keeps one connection checked out of the pool and sends the next batch
 * on it as soon as a batch returns, before that batch's callers go on. Through the pool the next
 * statement left only after every resumed caller's synchronous work (the pool hands out a client on
 * the next tick): ~2 ms per statement at c=32 (docs/decisions/statement-batching.md).
 */
import type { PoolClient } from 'pg';
import type { Db, Queryable } from '../db/pool';

export interface ProjectBatcher<I, O> {
  submit(projectId: string, item: I): Promise<O>;
}

interface Pending<I, O> {
  projectId: string;
  item: I;
  resolve(o: O): void;
  reject(e: unknown): void;
}

export function createProjectBatcher<I, O>(db: Db, run: (db: Queryable, items: I[]) => Promise<O[]>, maxBatch = 128): ProjectBatcher<I, O> {
  const queue: Pending<I, O>[] = [];
  let busy = false;

  const take = () => queue.splice(0, maxBatch).sort((a, b) => (a.projectId < b.projectId ? -1 : a.projectId > b.projectId ? 1 : 0));

  async function drain(): Promise<void> {
    busy = true;
    // Without a connection of its own (the pool exhausted or the database away) the lane goes
    // through the pool, whose errors reach the callers.
    let lane: PoolClient | null = await db.connect().catch(() => null);
    try {
      while (queue.length > 0) {
        const batch = take();
        try {
          const out = await run(lane ?? db, batch.map((p) => p.item));
          batch.forEach((p, i) => p.resolve(out[i]));
        } catch (err) {
          // The connection may be the cause: it is discarded, and the lane takes another.
          lane?.release(err instanceof Error ? err : true);
          lane = null;
          await retryOneByOne(batch, err);
          lane = await db.connect().catch(() => null);
        }
      }
    } finally {
      lane?.release();
      busy = false;
    }
  }

  async function retryOneByOne(batch: Pending<I, O>[], err: unknown): Promise<void> {
    if (batch.length === 1) {
      batch[0].reject(err);
      return;
    }
    for (const p of batch) {
      try {
        p.resolve((await run(db, [p.item]))[0]);
      } catch (e) {
        p.reject(e);
      }
    }
  }

  return {
    submit(projectId, item) {
      return new Promise<O>((resolve, reject) => {
        queue.push({ projectId, item, resolve, reject });
        if (!busy) void drain();
      });
    },
  };
}
