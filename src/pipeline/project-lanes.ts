/**
 * Per-project batching of the statements that take a project's governance lock in PostgreSQL
 * (tollgate_begin_call, tollgate_finish_call). At most one such statement per project is in flight
 * from this process; calls that arrive meanwhile go together in the next one. Without it, 32
 * concurrent calls of one project park 32 backends on the same advisory lock and the holder
 * competes with them for CPU (a lock convoy: 79 calls/s measured on 2 cores); with it, the lock
 * and the commit are shared by a batch. If a batch fails, its items are retried one by one, so
 * one bad call never fails the others.
 */
export interface ProjectBatcher<I, O> {
  submit(projectId: string, item: I): Promise<O>;
}

interface Pending<I, O> {
  item: I;
  resolve(o: O): void;
  reject(e: unknown): void;
}

export function createProjectBatcher<I, O>(run: (projectId: string, items: I[]) => Promise<O[]>, maxBatch = 64): ProjectBatcher<I, O> {
  const queues = new Map<string, Pending<I, O>[]>();
  const busy = new Set<string>();

  async function drain(projectId: string): Promise<void> {
    busy.add(projectId);
    try {
      for (;;) {
        const queue = queues.get(projectId);
        if (!queue || queue.length === 0) break;
        const batch = queue.splice(0, maxBatch);
        try {
          const out = await run(projectId, batch.map((p) => p.item));
          batch.forEach((p, i) => p.resolve(out[i]));
        } catch (err) {
          if (batch.length === 1) {
            batch[0].reject(err);
            continue;
          }
          for (const p of batch) {
            try {
              p.resolve((await run(projectId, [p.item]))[0]);
            } catch (e) {
              p.reject(e);
            }
          }
        }
      }
    } finally {
      busy.delete(projectId);
      if (queues.get(projectId)?.length === 0) queues.delete(projectId);
    }
  }

  return {
    submit(projectId, item) {
      return new Promise<O>((resolve, reject) => {
        let queue = queues.get(projectId);
        if (!queue) queues.set(projectId, (queue = []));
        queue.push({ item, resolve, reject });
        if (!busy.has(projectId)) void drain(projectId);
      });
    },
  };
}
