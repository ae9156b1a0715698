/**
 * A checkpoint over a backlog of events lets the event loop run between slices of 50 leaves
 * (src/integrity/log.ts): the checkpoint activity shares the API process with requests, and a
 * slice of 1,000 re-checked events held them for 20–30 ms. Its leaves are written from the events'
 * columns, and from the whole row where the columns cannot carry the timestamp. On a database of
 * its own, so no other test file's Tollgate checkpoints these events first.
 */
import { createPool, type Db } from '../../../src/db/pool';
import { appendEvents, chainAllProjectEvents } from '../../../src/db/repositories/events';
import { createProject } from '../../../src/db/repositories/projects';
import { complianceSigner } from '../../../src/integrity/keys';
import { issueCheckpoint } from '../../../src/integrity/log';
import { createOwnDatabase, type OwnDatabase } from '../../support/own-database';

// Counts the turns the log gives the event loop; the turns themselves still happen.
jest.mock('node:timers/promises', () => {
  const actual = jest.requireActual<typeof import('node:timers/promises')>('node:timers/promises');
  return { ...actual, setImmediate: jest.fn(actual.setImmediate) };
});
// eslint-disable-next-line @typescript-eslint/no-require-imports
const timers = require('node:timers/promises') as { setImmediate: jest.Mock };

describe('checkpoint over a backlog', () => {
  let own: OwnDatabase;
  let db: Db;

  beforeAll(async () => {
    own = await createOwnDatabase('checkpoint_turns');
    db = createPool(own.url, 4);
  });
  afterAll(async () => {
    await db?.end();
    await own?.drop();
  });

  it('hashes at most 50 leaves between two turns of the event loop, and still covers every event', async () => {
    const project = await createProject(db, { name: 'backlog', plan: 'production' });
    for (let i = 0; i < 5; i++) {
      await appendEvents(db, Array.from({ length: 500 }, (_, j) => ({ projectId: project.id, eventType: 'permit.allowed', source: 'test', phase: 'permit', metadata: { i, j } })));
    }
    await chainAllProjectEvents(db, project.id);
    const signer = await complianceSigner(db, { env: 'test', masterKey: undefined, databaseUrl: own.url });

    timers.setImmediate.mockClear();
    const r = await issueCheckpoint(db, signer, project.id);
    expect(Number(r.issued?.tree_size)).toBe(2500);
    // Reads of 1,000, 1,000 and 500 rows: a turn after every 50th leaf of a read but its last
    // (19, 19 and 9; each read's own query is a turn as well).
    expect(timers.setImmediate).toHaveBeenCalledTimes(47);
  });

  it('covers events whose timestamps the columns cannot carry (before year 1, after 9999)', async () => {
    const project = await createProject(db, { name: 'far dates', plan: 'production' });
    const base = { projectId: project.id, eventType: 'permit.allowed', source: 'test', phase: 'permit' };
    await appendEvents(db, [{ ...base, metadata: { i: 0 }, timestamp: new Date('2026-11-27T00:00:00.123Z') }]);
    // Years the application cannot write (PostgreSQL does not parse toISOString's six-digit years),
    // stored directly with their pending-chain rows, as the request path would queue them.
    for (const [i, at] of ['12026-01-01 00:00:00.5+00', '0044-03-15 12:00:00+00 BC'].entries()) {
      await db.query(
        `WITH e AS (INSERT INTO events (id, project_id, timestamp, event_type, source, phase) VALUES ($1, $2, $3, 'permit.allowed', 'test', 'permit') RETURNING seq)
         INSERT INTO event_chain_pending (project_id, first_seq, seqs) SELECT $2, seq, ARRAY[seq] FROM e`,
        [`evt_far_${i}_${project.id}`, project.id, at],
      );
    }
    await appendEvents(db, [{ ...base, metadata: { i: 3 }, timestamp: new Date('2026-11-27T00:00:01.000Z') }]);
    await chainAllProjectEvents(db, project.id);
    const signer = await complianceSigner(db, { env: 'test', masterKey: undefined, databaseUrl: own.url });
    const r = await issueCheckpoint(db, signer, project.id);
    expect(Number(r.issued?.tree_size)).toBe(4);
  });
});
