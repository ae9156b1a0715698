/**
 * A small pool of worker threads for inspecting large texts off the event loop (see index.ts
 * prepareInspection). Workers start on first use, are unreferenced while idle (they never keep a
 * process alive) and are replaced after a crash; a job of a crashed worker is rejected.
 *
 * Each worker runs worker (src/worker-thread.ts).
 */
import os from 'node:os';
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../../worker-thread';
import type { InspectableText } from './roles';

interface Job {
  id: number;
  texts: InspectableText[];
  resolve: (ruleIds: string[]) => void;
  reject: (err: Error) => void;
}
interface Slot {
  worker: Worker;
  job: Job | null;
}

const SIZE = Math.max(1, Math.min(2, (os.availableParallelism?.() ?? os.cpus().length) - 1));
const slots: Slot[] = [];
const queue: Job[] = [];
let nextId = 1;

function spawn(): Worker {
  return startWorker(__dirname, 'worker');
}

function startSlot(): Slot {
  const slot: Slot = { worker: spawn(), job: null };
  const fail = (err: Error) => {
    const i = slots.indexOf(slot);
    if (i >= 0) slots.splice(i, 1);
    const job = slot.job;
    slot.job = null;
    job?.reject(err);
    pump();
  };
  slot.worker.on('message', (msg: { id: number; ruleIds?: string[]; error?: string }) => {
    const job = slot.job;
    if (!job || job.id !== msg.id) return;
    slot.job = null;
    if (msg.ruleIds) job.resolve(msg.ruleIds);
    else job.reject(new Error(msg.error ?? 'firewall worker failed'));
    pump();
  });
  slot.worker.on('error', fail);
  slot.worker.on('exit', (code) => fail(new Error(`firewall worker exited (${code})`)));
  slot.worker.unref();
  slots.push(slot);
  return slot;
}

function pump(): void {
  while (queue.length) {
    let slot = slots.find((s) => !s.job);
    if (!slot && slots.length < SIZE) slot = startSlot();
    if (!slot) return;
    const job = queue.shift()!;
    try {
      slot.worker.postMessage({ id: job.id, texts: job.texts });
    } catch (err) {
      job.reject(err instanceof Error ? err : new Error(String(err)));
      continue;
    }
    slot.job = job;
    slot.worker.ref(); // keep the process alive while a job is out
  }
  for (const s of slots) if (!s.job) s.worker.unref();
}

/** Rule ids with every detector on, computed in a worker thread. */
export function inspectInWorker(texts: InspectableText[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    queue.push({ id: nextId++, texts, resolve, reject });
    try {
      pump();
    } catch (err) {
      // A worker could not be started: the job is still queued.
      const i = queue.findIndex((j) => j.resolve === resolve);
      if (i >= 0) queue.splice(i, 1);
      reject(err instanceof Error ? err : new Error(String(err)));
    }
  });
}

/** Stops the workers (tests, shutdown); the pool starts again on next use. */
export async function closeFirewallPool(): Promise<void> {
  const all = slots.splice(0);
  await Promise.all(all.map((s) => s.worker.terminate()));
}
