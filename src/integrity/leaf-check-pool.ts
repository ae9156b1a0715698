/**
 * Worker threads that read and check ranges of a chain for `integrity verify` (leaf-checks.ts),
 * each on a database connection of its own: the rows are parsed, written out and hashed on other
 * cores while the walk's thread only follows the links. Started for one verification and stopped
 * after it; a worker that fails rejects its ranges.
 *
 * Each worker runs leaf-check-worker (src/worker-thread.ts).
 */
import os from 'node:os';
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../worker-thread';
import type { ChainRange, CheckedRange } from './leaf-checks';

/**
 * Workers for a machine: one per core, at most four. The walk's thread only follows the links and
 * waits; a core left to it idled while one worker bounded a two-core machine.
 */
export function leafCheckWorkers(): number {
  return Math.max(1, Math.min(4, os.availableParallelism?.() ?? os.cpus().length));
}

function spawn(databaseUrl: string): Worker {
  return startWorker(__dirname, 'leaf-check-worker', { workerData: { databaseUrl } });
}

interface Pending {
  resolve: (r: CheckedRange) => void;
  reject: (err: Error) => void;
  worker: Worker;
}

export class LeafCheckPool {
  private readonly workers: Worker[] = [];
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private turn = 0;

  constructor(size: number, databaseUrl: string) {
    for (let i = 0; i < size; i++) {
      const worker = spawn(databaseUrl);
      worker.on('message', (msg: { id?: number; result?: CheckedRange; error?: string }) => {
        const p = msg.id === undefined ? undefined : this.pending.get(msg.id);
        if (!p) return;
        this.pending.delete(msg.id!);
        if (msg.result) p.resolve(msg.result);
        else p.reject(new Error(msg.error ?? 'leaf check worker failed'));
      });
      const fail = (err: Error) => {
        for (const [id, p] of this.pending) {
          if (p.worker !== worker) continue;
          this.pending.delete(id);
          p.reject(err);
        }
      };
      worker.on('error', fail);
      worker.on('exit', (code) => fail(new Error(`leaf check worker exited (${code})`)));
      this.workers.push(worker);
    }
  }

  /** Reads and checks a range on the next worker in turn. */
  check(range: ChainRange): Promise<CheckedRange> {
    const worker = this.workers[this.turn++ % this.workers.length];
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, worker });
      worker.postMessage({ id, range });
    });
  }

  /** Closes each worker's connection (waiting up to 2 s for it), then stops the workers. */
  async close(): Promise<void> {
    const all = this.workers.splice(0);
    await Promise.all(
      all.map(async (w) => {
        const closed = new Promise<void>((resolve) => {
          w.on('message', (msg: { closed?: boolean }) => msg.closed && resolve());
          w.once('exit', () => resolve());
          setTimeout(resolve, 2000).unref();
        });
        w.postMessage({ close: true });
        await closed;
        await w.terminate();
      }),
    );
  }
}
