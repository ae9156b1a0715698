/**
 * Batching of the statements that take projects' governance locks in PostgreSQL
 * (tollgate_begin_calls, tollgate_finish_calls). At most one such statement is in flight from this
 * process; calls that arrive meanwhile go together in the next one, sorted by project (stable, so
 * each project's calls keep their order, and every batch locks projects in the same order).
 * Without it, 32 concurrent calls of one project park 32 backends on the same advisory lock and
 * the holder competes with them for CPU (a lock convoy: 79 calls/s measured on 2 cores), and 32
 * projects pay 32 commits; with it, locks and one commit are shared by a batch. If a batch fails,
 * its items are retried one by one, so one bad call never fails the others.
 */
export interface ProjectBatcher<I, O> {
  submit(projectId: string, item: I): Promise<O>;
}

/** One lane for all projects (see above); items carry their project id. */
const LANE = 'all';

interface Pending<I, O> {
  projectId: string;
  item: I;
  resolve(o: O): void;
  reject(e: unknown): void;
}

export function createProjectBatcher<I, O>(run: (items: I[]) => Promise<O[]>, maxBatch = 128): ProjectBatcher<I, O> {
  const queues = new Map<string, Pending<I, O>[]>();
  const busy = new Set<string>();

  async function drain(lane: string): Promise<void> {
    busy.add(lane);
    try {
      for (;;) {
        const queue = queues.get(lane);
        if (!queue || queue.length === 0) break;
        const batch = queue.splice(0, maxBatch).sort((a, b) => (a.projectId < b.projectId ? -1 : a.projectId > b.projectId ? 1 : 0));
        try {
          const out = await run(batch.map((p) => p.item));
          batch.forEach((p, i) => p.resolve(out[i]));
        } catch (err) {
          if (batch.length === 1) {
            batch[0].reject(err);
            continue;
          }
          for (const p of batch) {
            try {
              p.resolve((await run([p.item]))[0]);
            } catch (e) {
              p.reject(e);
            }
          }
        }
      }
    } finally {
      busy.delete(lane);
      if (queues.get(lane)?.length === 0) queues.delete(lane);
    }
  }

  return {
    submit(projectId, item) {
      return new Promise<O>((resolve, reject) => {
        let queue = queues.get(LANE);
        if (!queue) queues.set(LANE, (queue = []));
        queue.push({ projectId, item, resolve, reject });
        if (!busy.has(LANE)) void drain(LANE);
      });
    },
  };
}
