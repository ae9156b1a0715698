/** Worker-thread entry of archive-rows.ts: writes an archive's row parts (their files in the archive store, scratch objects) on a connection of its own, then says so. */
import { parentPort, workerData } from 'node:worker_threads';
import { buildExportPart, type BuildDeps } from '../compliance/build';
import { createPool } from '../db/pool';
import type { ExportPart } from '../db/repositories/compliance-exports';
import { Pace } from './pace';

const { config, exportId, parts, cpuShare } = workerData as { config: BuildDeps['config']; exportId: string; parts: ExportPart[]; cpuShare: number };
// The archive's pace, in this thread's own time.
const pace = new Pace(cpuShare);

void (async () => {
  // The parts' reads: a cursor's connection and one for the files' rows.
  const db = createPool(config.databaseUrl, 2);
  try {
    for (const part of parts) await buildExportPart({ db, config, scratch: true, pause: () => pace.step() }, exportId, part);
    parentPort!.postMessage({ done: true });
  } catch (err) {
    parentPort!.postMessage({ error: String((err as Error)?.message ?? err) });
  } finally {
    await db.end().catch(() => undefined);
  }
})();
