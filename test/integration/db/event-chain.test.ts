/**
 * The sequencer chains every pending project in one transaction (chainEvents): each project's
 * events after its own head, in seq order, a bounded share of pending statements per project, and
 * projects another sequencer holds are skipped. Each chain must verify on its own.
 *
 * On a database of its own: the API processes other test files start run the sequencer over every
 * project with pending events, and one of them chaining this file's projects between its inserts
 * and its rounds changed what a round finds (a CI run saw a round chain 0 events).
 */
import { createPool, type Db } from '../../../src/db/pool';
import { appendEvents } from '../../../src/db/repositories/events';
import { CHAIN_LOCK_CLASS, chainEvents, chainProjectEvents } from '../../../src/db/repositories/event-chain';
import { verifyEventChain } from '../../../src/db/repositories/event-chain-verification';
import type { NewEvent } from '../../../src/events/types';
import { startSequencer } from '../../../src/events/sequencer';
import type { Logger } from '../../../src/logger';
import { createOwnDatabase, type OwnDatabase } from '../../support/own-database';

describe('chainEvents (several projects in one transaction)', () => {
  let own: OwnDatabase;
  let db: Db;
  const tag = `${process.pid}_${Date.now()}`;
  const [a, b, c] = ['a', 'b', 'c'].map((p) => `proj_chain_events_${p}_${tag}`);
  const statement = (projectId: string, n: number, label: string): NewEvent[] =>
    Array.from({ length: n }, (_, i) => ({ projectId, eventType: `test.${label}_${i}`, source: 'test', phase: 'test', metadata: { label, i } }));
  const chainedCount = async (projectId: string) =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM event_chain WHERE project_id = $1', [projectId])).rows[0].n);
  const positions = async (projectId: string) =>
    (await db.query<{ chain_pos: string }>('SELECT chain_pos FROM event_chain WHERE project_id = $1 ORDER BY chain_pos', [projectId])).rows.map((r) => Number(r.chain_pos));

  beforeAll(async () => {
    own = await createOwnDatabase('chain_events');
    // The product's pool: a connection that ends while the database is dropped after the tests
    // is discarded, not an unhandled error.
    db = createPool(own.url, 4);
  });
  afterAll(async () => {
    await db?.end();
    await own?.drop();
  });

  it('chains each project after its own head, a bounded share each, and skips a project whose lock is held', async () => {
    // Project a already has a chain (3 events); then statements of the three projects interleave.
    await appendEvents(db, statement(a, 3, 'head'));
    expect(await chainProjectEvents(db, a)).toEqual({ events: 3, full: false });
    for (let s = 0; s < 6; s++) {
      await appendEvents(db, statement(a, 2, `a${s}`));
      if (s < 2) await appendEvents(db, statement(b, 3, `b${s}`));
      if (s < 1) await appendEvents(db, statement(c, 1, `c${s}`));
    }

    // Another sequencer is chaining project c.
    const other = await db.connect();
    try {
      await other.query('SELECT pg_advisory_lock($1, hashtext($2))', [CHAIN_LOCK_CLASS, c]);
      // batch 8 over 3 projects: at most max(4, ceil(8 / 3)) = 4 pending statements per project.
      const round = await chainEvents(db, [a, b, c], 8);
      expect(round).toEqual({ events: 4 * 2 + 2 * 3, fullProjects: [a] });
      expect(await chainedCount(c)).toBe(0);
      await other.query('SELECT pg_advisory_unlock($1, hashtext($2))', [CHAIN_LOCK_CLASS, c]);
    } finally {
      other.release();
    }

    expect(await chainEvents(db, [a, c], 8)).toEqual({ events: 2 * 2 + 1, fullProjects: [] });
    expect(await chainEvents(db, [a, b, c], 8)).toEqual({ events: 0, fullProjects: [] });

    expect(await positions(a)).toEqual(Array.from({ length: 3 + 12 }, (_, i) => i + 1));
    expect(await positions(b)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await positions(c)).toEqual([1]);
    // Chain order is seq order within each project.
    const { rows } = await db.query<{ ordered: boolean }>(
      `SELECT bool_and(prev_seq IS NULL OR prev_seq < seq) AS ordered
         FROM (SELECT seq, lag(seq) OVER (PARTITION BY project_id ORDER BY chain_pos) AS prev_seq FROM event_chain WHERE project_id = ANY($1)) x`,
      [[a, b, c]],
    );
    expect(rows[0].ordered).toBe(true);
    await expect(verifyEventChain(db, a)).resolves.toMatchObject({ ok: true, count: 15 });
    await expect(verifyEventChain(db, b)).resolves.toMatchObject({ ok: true, count: 6 });
    await expect(verifyEventChain(db, c)).resolves.toMatchObject({ ok: true, count: 1 });
  });

  it('the sequencer chains every other project when one project\'s pending rows cannot be chained', async () => {
    const [bad, good] = ['bad', 'good'].map((p) => `proj_chain_events_${p}_${tag}`);
    await appendEvents(db, statement(bad, 1, 'bad'));
    expect((await chainProjectEvents(db, bad)).events).toBe(1);
    // A pending row for a seq that is chained already: its round would insert the chain row twice.
    await db.query('INSERT INTO event_chain_pending (project_id, first_seq, seqs) SELECT project_id, seq, ARRAY[seq] FROM event_chain WHERE project_id = $1', [bad]);
    await appendEvents(db, statement(good, 2, 'good'));
    const warnings: unknown[] = [];
    const logger = { warn: (o: unknown) => warnings.push(o), info: () => undefined, error: () => undefined, debug: () => undefined } as unknown as Logger;
    const sequencer = startSequencer({ db, logger, intervalMs: 60_000 });
    try {
      await sequencer.runOnce();
    } finally {
      await sequencer.close();
    }
    expect(await chainedCount(good)).toBe(2);
    expect(warnings).toEqual([expect.objectContaining({ project_id: bad })]);
    await db.query('DELETE FROM event_chain_pending WHERE project_id = $1', [bad]);
  });

  it('does nothing for no projects', async () => {
    await expect(chainEvents(db, [])).resolves.toEqual({ events: 0, fullProjects: [] });
  });
});
