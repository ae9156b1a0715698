/**
 * An archive's row parts (permits, call records, usage: RFC 8785 lines of the window's rows) built
 * in a worker thread while the archive's thread writes the events part: each is most of a core's
 * work per leaf (parsing the rows, writing them out canonically, hashing), and one thread did
 * both one after the other while the other core, beside PostgreSQL's reads, idled. The worker
 * has its own database connections and writes its files into the archive store as the thread
 * would (src/compliance/build.ts); it lives for one archive. A worker that fails or exits fails
 * the archive's write, which a rerun does again from its start (src/retention/archive.ts).
 *
 * The worker runs archive-rows-worker (src/worker-thread.ts).
 */
import { startWorker } from '../worker-thread';
import type { BuildDeps } from '../compliance/build';
import type { ExportPart } from '../db/repositories/compliance-exports';

export function buildRowPartsInWorker(config: BuildDeps['config'], exportId: string, parts: ExportPart[], cpuShare = 1): Promise<void> {
  const workerData = { config: { env: config.env, masterKey: config.masterKey, databaseUrl: config.databaseUrl, archiveStore: config.archiveStore }, exportId, parts, cpuShare };
  const worker = startWorker(__dirname, 'archive-rows-worker', { workerData });
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const settle = (err?: Error) => {
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolve();
    };
    worker.on('message', (msg: { done?: true; error?: string }) => settle(msg.done ? undefined : new Error(`archive rows worker: ${msg.error}`)));
    worker.on('error', (err) => settle(err));
    worker.on('exit', (code) => settle(new Error(`archive rows worker exited (${code}) before its parts were written`)));
  });
}
