/**
 * `integrity verify` reads a chain in ranges of positions and checks each range on its own (in this
 * thread or in worker threads): the links within a range there, the link between two ranges in the
 * walk (src/db/repositories/event-chain-verification.ts, src/integrity/leaf-checks.ts). Ranges of 4
 * positions over a log of events and call records put every kind of break at a range's first row,
 * in its middle and in a last range of one row; the answer must be the one a single range gives.
 *
 * On a database of its own: the tests edit records and chain rows, which the sequencers and
 * checkpoint rounds of other test files' Tollgates would otherwise meet.
 */
import { createGovernedCallActivities } from '../../../activities/governed-call';
import { callInput, instantProvider } from '../../../bench/lib/governed-calls';
import { systemClock } from '../../../src/clock';
import type { Db } from '../../../src/db/pool';
import { appendEvents } from '../../../src/db/repositories/events';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import { verifyEventChain } from '../../../src/db/repositories/event-chain-verification';
import { createProject } from '../../../src/db/repositories/projects';
import { createGovernance } from '../../../src/governance';
import { rootFromChain, rootOfRange } from '../../../src/integrity/log';
import { createLogger } from '../../../src/logger';
import { pricing } from '../../../src/pricing';
import { canonicalEvent, eventHash } from '../../../src/events/canonical';
import type { EventRecord } from '../../../src/events/types';
import { leafHash } from '../../../src/integrity/hashes';
import { ownDatabasePool } from '../../support/own-database';

describe('verifying a chain in ranges', () => {
  const own = ownDatabasePool('verify_ranges');
  const RANGE = 4;

  /** One governed call through the in-process pipeline; returns its execution id. */
  async function pipelineCall(db: Db, projectId: string): Promise<string> {
    const calls = createGovernedCallActivities({ db, clock: systemClock, logger: createLogger('warn'), governance: createGovernance({ db, clock: systemClock }), pricing, providers: instantProvider(), recordCommit: 'sync' });
    const c = callInput(projectId);
    const gov = await calls.govern({ input: c.input, request: c.request, route: 'executions', inspectableText: [c.prompt], permitMetadata: {}, inProcess: {} });
    expect(gov.decision).toBe('allow');
    const { outcome } = await calls.dispatch(c.input);
    await calls.record(c.input, { kind: 'dispatched', gov, outcome });
    return c.input.executionId;
  }

  const events = (projectId: string, from: number, n: number) =>
    appendEvents(own.db, Array.from({ length: n }, (_, i) => ({ projectId, eventType: 'test.marker', source: 'test', phase: 'test', metadata: { i: from + i } })));

  /**
   * A log of 13 leaves: 5 events, a call's record, 4 events, a call's record, 2 events (the records
   * at positions 6 and 11, inside the ranges 5–8 and 9–12); returns the chain rows and the records.
   */
  async function rangedLog() {
    const project = await createProject(own.db, { name: 'ranges', plan: 'production' });
    await events(project.id, 0, 5);
    await pipelineCall(own.db, project.id);
    await events(project.id, 5, 4);
    await pipelineCall(own.db, project.id);
    await events(project.id, 9, 2);
    await chainAllProjectEvents(own.db, project.id);
    const { rows: chain } = await own.db.query<{ seq: string; chain_pos: string; hash: string }>(
      'SELECT seq, chain_pos, hash FROM event_chain WHERE project_id = $1 ORDER BY chain_pos',
      [project.id],
    );
    const { rows: records } = await own.db.query<{ id: string; seq: string }>('SELECT id, seq FROM calls WHERE project_id = $1 ORDER BY seq', [project.id]);
    const positionOf = (seq: string) => chain.findIndex((c) => c.seq === seq) + 1;
    return { projectId: project.id, chain, records: records.map((r) => ({ id: r.id, seq: r.seq, position: positionOf(r.seq) })) };
  }

  /** The chain verified whole (one range, this thread) and in ranges of 4 (this thread, two workers): the same answer. */
  async function verifiedEveryWay(projectId: string, treeSize?: number) {
    const whole = await verifyEventChain(own.db, projectId, { treeSize, workers: 0 });
    expect(await verifyEventChain(own.db, projectId, { treeSize, workers: 0, rowsPerRead: RANGE })).toEqual(whole);
    expect(await verifyEventChain(own.db, projectId, { treeSize, workers: 2, rowsPerRead: RANGE })).toEqual(whole);
    return whole;
  }

  it('passes an untouched chain read in ranges, and builds the tree of any size from them', async () => {
    const { projectId, chain } = await rangedLog();
    expect(chain.length).toBeGreaterThanOrEqual(2 * RANGE + 2);
    expect(chain.length % RANGE).not.toBe(0);
    expect(await verifiedEveryWay(projectId)).toEqual({ ok: true, count: chain.length, broken_at_seq: null, head_hash: chain[chain.length - 1].hash });
    // Tree sizes at a range's end, inside one, and the whole chain.
    for (const size of [RANGE, RANGE + 2, chain.length]) {
      const r = await verifiedEveryWay(projectId, size);
      expect(rootOfRange(r.range_at_size!).equals(await rootFromChain(own.db, projectId, size))).toBe(true);
    }
  });

  const OTHER_PREV = 'b'.repeat(64);
  const relink = (seq: number) => `UPDATE event_chain SET prev_hash = '${OTHER_PREV}', hash = $1, leaf_hash = $2 WHERE seq = ${seq}`;

  it('names an edited record in the middle of a range, an edited first or last row of one, and each broken link', async () => {
    const { projectId, chain, records } = await rangedLog();
    const seqAt = (pos: number) => Number(chain[pos - 1].seq);
    const broken = (pos: number) => ({ ok: false, count: pos - 1, broken_at_seq: seqAt(pos), head_hash: chain[pos - 2].hash });
    const middle = records.filter((r) => r.position % RANGE !== 1 && r.position % RANGE !== 0);
    expect(middle.map((r) => r.position)).toEqual([6, 11]);
    const last = chain.length;
    expect(last % RANGE).toBe(1);

    const tampers: [what: string, pos: number, sql: string, undo: string][] = [
      ...middle.map((r): [string, number, string, string] => [
        `record at ${r.position}`,
        r.position,
        `UPDATE calls SET cost_usd_micros = cost_usd_micros + 1 WHERE id = '${r.id}'`,
        `UPDATE calls SET cost_usd_micros = cost_usd_micros - 1 WHERE id = '${r.id}'`,
      ]),
      [`event at ${RANGE + 1}`, RANGE + 1, `UPDATE events SET metadata = '{"i":99}' WHERE seq = ${seqAt(RANGE + 1)}`, ''],
      [`event at ${last}`, last, `UPDATE events SET metadata = '{"i":99}' WHERE seq = ${seqAt(last)}`, ''],
      [`link at ${2 * RANGE + 1}`, 2 * RANGE + 1, `UPDATE event_chain SET prev_hash = repeat('b', 64) WHERE seq = ${seqAt(2 * RANGE + 1)}`, ''],
      [`link at ${RANGE + 3}`, RANGE + 3, `UPDATE event_chain SET prev_hash = repeat('b', 64) WHERE seq = ${seqAt(RANGE + 3)}`, ''],
      // Rows re-chained from another prev_hash, their own hashes recomputed: only the link to the row before fails.
      [`relinked event at ${RANGE + 1}`, RANGE + 1, relink(seqAt(RANGE + 1)), ''],
      [`relinked event at ${RANGE + 3}`, RANGE + 3, relink(seqAt(RANGE + 3)), ''],
    ];
    for (const [what, pos, sql, undo] of tampers) {
      const { rows: saved } = await own.db.query<{ prev_hash: string; hash: string; leaf_hash: Buffer; metadata: unknown }>(
        'SELECT c.prev_hash, c.hash, c.leaf_hash, e.metadata FROM event_chain c LEFT JOIN events e ON e.seq = c.seq WHERE c.seq = $1',
        [seqAt(pos)],
      );
      if (what.startsWith('relinked')) {
        const { rows: ev } = await own.db.query<EventRecord>('SELECT * FROM events WHERE seq = $1', [seqAt(pos)]);
        const canonical = canonicalEvent(ev[0], OTHER_PREV);
        await own.db.query(sql, [eventHash(OTHER_PREV, canonical), leafHash(canonical)]);
        // The row alone still checks out: its link is what fails.
        expect(eventHash(OTHER_PREV, canonical)).not.toBe(saved[0].hash);
      } else await own.db.query(sql);
      expect([what, await verifiedEveryWay(projectId)]).toEqual([what, broken(pos)]);
      // Put back: the chain verifies again, so the next edit is the only one.
      if (undo) await own.db.query(undo);
      await own.db.query('UPDATE event_chain SET prev_hash = $2, hash = $3, leaf_hash = $4 WHERE seq = $1', [seqAt(pos), saved[0].prev_hash, saved[0].hash, saved[0].leaf_hash]);
      if (saved[0].metadata !== null) await own.db.query('UPDATE events SET metadata = $2 WHERE seq = $1', [seqAt(pos), JSON.stringify(saved[0].metadata)]);
      expect(await verifyEventChain(own.db, projectId, { workers: 0, rowsPerRead: RANGE })).toMatchObject({ ok: true, count: chain.length });
    }
  });
});
