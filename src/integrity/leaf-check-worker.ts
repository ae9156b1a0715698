/** Worker-thread entry of the leaf check pool (leaf-check-pool.ts): checks one batch per message. */
import { parentPort } from 'node:worker_threads';
import { checkLeaves, type LeafCheckJob } from './leaf-checks';

parentPort?.on('message', (msg: { id: number; job: LeafCheckJob }) => {
  try {
    const result = checkLeaves(msg.job);
    parentPort!.postMessage({ id: msg.id, result }, [result.leaves.buffer as ArrayBuffer, result.ok.buffer as ArrayBuffer]);
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: String((err as Error)?.message ?? err) });
  }
});
