/**
 * What building a compliance export's events part costs Tollgate's process (not a test):
 * `npm run bench:export`.
 *
 * The part (src/compliance/build.ts) writes every event of the window out with its inclusion
 * proof. It runs in the API process unless the worker runs apart, so besides its CPU per event
 * this prints the longest the event loop waited meanwhile (a 0 ms interval timer's largest gap).
 * On a throwaway database: BENCH_EVENTS (default 10,000) events shaped as a governed call's,
 * chained and checkpointed, then BENCH_ROUNDS (default 3) exports of all of them; each round
 * then finalizes the export (signs the manifest and hashes the bundle) and prints the same for it.
 */
import { buildExportPart, finalizeExport, prepareExport } from '../src/compliance/build';
import { insertExport } from '../src/db/repositories/compliance-exports';
import { growEventLog, longestWaitProbe, onThrowawayDatabase } from './lib/event-log';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

onThrowawayDatabase('export', async ({ db, url, projectId }) => {
  const since = new Date(Date.now() - 60_000);
  await growEventLog(db, projectId, EVENTS);
  const deps = { db, config: { env: 'test' as const, masterKey: undefined, databaseUrl: url } };
  for (let r = 1; r <= ROUNDS; r++) {
    const row = await insertExport(db, { id: `exp_bench_${r}`, projectId, since, until: new Date(Date.now() + 60_000), include: ['events'], requestedBy: 'bench' });
    await prepareExport(deps, row.id); // the first round's issues the checkpoint
    const probe = longestWaitProbe();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const n = await buildExportPart(deps, row.id, 'events');
    const cpu = process.cpuUsage(cpu0);
    const longest = probe.stop();
    console.log(`round ${r}: ${n} events in ${(performance.now() - t0).toFixed(0)} ms, ${((cpu.user + cpu.system) / n).toFixed(1)} µs of this process's CPU per event, the event loop's longest wait ${longest.toFixed(1)} ms`);
    const fprobe = longestWaitProbe();
    const fcpu0 = process.cpuUsage();
    const f0 = performance.now();
    const done = await finalizeExport(deps, row.id);
    const fcpu = process.cpuUsage(fcpu0);
    console.log(
      `round ${r}: finalized (bundle ${(done.bundle_bytes / 2 ** 20).toFixed(1)} MiB hashed) in ${(performance.now() - f0).toFixed(0)} ms, ${((fcpu.user + fcpu.system) / 1000).toFixed(0)} ms of CPU, the event loop's longest wait ${fprobe.stop().toFixed(1)} ms`,
    );
  }
}).catch((err) => {
  console.error(err);
  process.exit(1);
});
