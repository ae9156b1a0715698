/**
 * Worker threads that check batches of chain rows for `integrity verify` (leaf-checks.ts): the
 * rows' leaves are written out and hashed on other cores while the main thread reads the next
 * batches and walks the links. Started for one verification and stopped after it; a worker that
 * fails rejects its batches.
 *
 * From source (tsx, jest) a worker registers tsx and loads leaf-check-worker.ts; from the
 * compiled build it loads leaf-check-worker.js next to this file (as src/governance/firewall/pool.ts).
 */
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { LeafCheckJob, LeafCheckResult } from './leaf-checks';

/** Workers for a machine: every core but one for the main thread, at most four. */
export function leafCheckWorkers(): number {
  return Math.max(1, Math.min(4, (os.availableParallelism?.() ?? os.cpus().length) - 1));
}

function spawn(): Worker {
  if (__filename.endsWith('.ts')) {
    const tsx = require.resolve('tsx/cjs/api');
    const entry = path.join(__dirname, 'leaf-check-worker.ts');
    return new Worker(`require(${JSON.stringify(tsx)}).register(); require(${JSON.stringify(entry)});`, { eval: true });
  }
  return new Worker(path.join(__dirname, 'leaf-check-worker.js'));
}

interface Pending {
  resolve: (r: LeafCheckResult) => void;
  reject: (err: Error) => void;
}

export class LeafCheckPool {
  private readonly workers: Worker[] = [];
  private readonly pending = new Map<number, Pending>();
  private readonly owner = new Map<number, Worker>();
  private nextId = 1;
  private turn = 0;

  constructor(size: number) {
    for (let i = 0; i < size; i++) {
      const worker = spawn();
      worker.on('message', (msg: { id: number; result?: LeafCheckResult; error?: string }) => {
        const p = this.pending.get(msg.id);
        if (!p) return;
        this.pending.delete(msg.id);
        this.owner.delete(msg.id);
        if (msg.result) p.resolve({ leaves: new Uint8Array(msg.result.leaves), ok: new Uint8Array(msg.result.ok) });
        else p.reject(new Error(msg.error ?? 'leaf check worker failed'));
      });
      const fail = (err: Error) => {
        for (const [id, w] of this.owner) {
          if (w !== worker) continue;
          this.pending.get(id)?.reject(err);
          this.pending.delete(id);
          this.owner.delete(id);
        }
      };
      worker.on('error', fail);
      worker.on('exit', (code) => fail(new Error(`leaf check worker exited (${code})`)));
      this.workers.push(worker);
    }
  }

  /** Checks a batch on the next worker in turn. */
  check(job: LeafCheckJob): Promise<LeafCheckResult> {
    const worker = this.workers[this.turn++ % this.workers.length];
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.owner.set(id, worker);
      worker.postMessage({ id, job });
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.splice(0).map((w) => w.terminate()));
  }
}
