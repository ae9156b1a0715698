/**
 * What building a compliance export's events part costs Tollgate's process (not a test):
 * `npm run bench:log -- --export`.
 *
 * The part (src/compliance/build.ts) writes every event of the window out with its inclusion
 * proof. It runs in the API process unless the worker runs apart, so besides its CPU per event
 * this prints the longest the event loop waited meanwhile (a 0 ms interval timer's largest gap).
 * On a throwaway database: BENCH_EVENTS (default 10,000) events shaped as a governed call's,
 * chained and checkpointed, then BENCH_ROUNDS (default 3) exports of all of them; each round
 * then finalizes the export (signs the manifest and hashes the bundle) and prints the same for it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildExportPart, finalizeExport, prepareExport } from '../../src/compliance/build';
import { insertExport } from '../../src/db/repositories/compliance-exports';
import { growEventLog, measured, onThrowawayDatabase } from '../lib/event-log';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

export function run(): Promise<void> {
  return onThrowawayDatabase('export', async ({ db, url, projectId }) => {
    const since = new Date(Date.now() - 60_000);
    await growEventLog(db, projectId, EVENTS);
    const archiveDir = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-export-'));
    const deps = { db, config: { env: 'test' as const, masterKey: undefined, databaseUrl: url, archiveStore: { kind: 'directory' as const, dir: archiveDir } } };
    for (let r = 1; r <= ROUNDS; r++) {
      const row = await insertExport(db, { id: `exp_bench_${r}`, projectId, since, until: new Date(Date.now() + 60_000), include: ['events'], requestedBy: 'bench' });
      await prepareExport(deps, row.id); // the first round's issues the checkpoint
      const part = await measured(() => buildExportPart(deps, row.id, 'events'));
      const n = part.result;
      console.log(`round ${r}: ${n} events in ${part.ms.toFixed(0)} ms, ${(part.cpuUs / n).toFixed(1)} µs of this process's CPU per event, the event loop's longest wait ${part.longestWaitMs.toFixed(1)} ms`);
      const fin = await measured(() => finalizeExport(deps, row.id));
      console.log(
        `round ${r}: finalized (bundle ${(fin.result.bundle_bytes / 2 ** 20).toFixed(1)} MiB hashed) in ${fin.ms.toFixed(0)} ms, ${(fin.cpuUs / 1000).toFixed(0)} ms of CPU, the event loop's longest wait ${fin.longestWaitMs.toFixed(1)} ms`,
      );
    }
  });
}
