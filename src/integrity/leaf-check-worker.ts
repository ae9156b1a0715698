/** Worker-thread entry of the leaf check pool (leaf-check-pool.ts): reads and checks one range of a chain per message, on a connection of its own. */
import { parentPort, workerData } from 'node:worker_threads';
import { createPool } from '../db/pool';
import { checkChainRange, type ChainRange } from './leaf-checks';

const db = createPool((workerData as { databaseUrl: string }).databaseUrl, 1);

parentPort?.on('message', (msg: { id: number; range: ChainRange } | { close: true }) => {
  if ('close' in msg) {
    void db.end().then(() => parentPort!.postMessage({ closed: true }));
    return;
  }
  checkChainRange(db, msg.range).then(
    (result) => parentPort!.postMessage({ id: msg.id, result }, [result.leaves.buffer as ArrayBuffer]),
    (err: unknown) => parentPort!.postMessage({ id: msg.id, error: String((err as Error)?.message ?? err) }),
  );
});
