/**
 * What a signed checkpoint costs Tollgate's process per event (not a test):
 * `npm run bench:log -- --checkpoint`.
 *
 * A checkpoint (src/integrity/log.ts) reads every chain row since the last one, checks its links,
 * builds the project's Merkle tree from the leaf hashes the sequencer stored and stores the tree's
 * new nodes.
 * It runs in the API process unless the worker runs apart, every 30 s, so its CPU per event is part
 * of what a governed call costs (a call leaves one leaf; denials and jobs also leave events). On a throwaway database: a warm-up
 * checkpoint of 5,000 events, then BENCH_ROUNDS (default 3) rounds of BENCH_EVENTS (default
 * 20,000) events appended, chained and checkpointed; each round prints the checkpoint's wall time,
 * this process's and PostgreSQL's CPU per event and the longest the event loop waited meanwhile (a 0 ms interval
 * timer's largest gap).
 */
import { complianceSigner } from '../../src/integrity/keys';
import { issueCheckpoint } from '../../src/integrity/log';
import { growEventLog, measured, onThrowawayDatabase } from '../lib/event-log';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

export function run(): Promise<void> {
  return onThrowawayDatabase('checkpoint', async ({ db, url, projectId }) => {
    const signer = await complianceSigner(db, { env: 'test', masterKey: undefined, databaseUrl: url });
    await growEventLog(db, projectId, 5_000);
    await issueCheckpoint(db, signer, projectId);
    for (let r = 1; r <= ROUNDS; r++) {
      await growEventLog(db, projectId, EVENTS);
      const m = await measured(() => issueCheckpoint(db, signer, projectId));
      console.log(
        `round ${r}: checkpoint to ${m.result.issued?.tree_size} events, ${EVENTS} new: ${m.ms.toFixed(0)} ms, ${(m.cpuUs / EVENTS).toFixed(1)} µs of this process's CPU per event, PostgreSQL ${((m.postgresMs * 1000) / EVENTS).toFixed(1)} µs, the event loop's longest wait ${m.longestWaitMs.toFixed(1)} ms`,
      );
    }
  });
}
