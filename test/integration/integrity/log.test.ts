/**
 * A checkpoint over a backlog (src/integrity/log.ts) builds its tree from the leaf hashes the
 * sequencer stored, which are the events' canonical forms hashed as RFC 6962 leaves. Rows chained
 * before leaf hashes were stored are written out from their events, with a turn of the event loop
 * every 50 leaves: the checkpoint activity shares the API process with requests, and a slice of
 * 1,000 re-checked events held them for 20–30 ms. Those leaves are written from the events'
 * columns, and from the whole row where the columns cannot carry the timestamp. On a database of
 * its own, so no other test file's Tollgate checkpoints these events first.
 */
import { appendEvents } from '../../../src/db/repositories/events';
import { canonicalEvent } from '../../../src/events/canonical';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import type { EventRecord } from '../../../src/events/types';
import { rootFromInclusionProof, sourceOf, verifyConsistency } from '../../../src/integrity/merkle';
import { leafHash, nodeHash } from '../../../src/integrity/hashes';
import { getNodes } from '../../../src/db/repositories/integrity-log';
import { createProject } from '../../../src/db/repositories/projects';
import { complianceSigner } from '../../../src/integrity/keys';
import { issueCheckpoint, proveConsistency, proveInclusion, rootFromChain, treeNodes } from '../../../src/integrity/log';
import { ownDatabasePool } from '../../support/own-database';

// Counts the turns the log gives the event loop; the turns themselves still happen.
jest.mock('node:timers/promises', () => {
  const actual = jest.requireActual<typeof import('node:timers/promises')>('node:timers/promises');
  return { ...actual, setImmediate: jest.fn(actual.setImmediate) };
});
// eslint-disable-next-line @typescript-eslint/no-require-imports
const timers = require('node:timers/promises') as { setImmediate: jest.Mock };

describe('checkpoint over a backlog', () => {
  const own = ownDatabasePool('checkpoint_turns');

  async function backlog(name: string, events: number) {
    const project = await createProject(own.db, { name, plan: 'production' });
    for (let i = 0; i < events / 500; i++) {
      await appendEvents(own.db, Array.from({ length: 500 }, (_, j) => ({ projectId: project.id, eventType: 'permit.allowed', source: 'test', phase: 'permit', metadata: { i, j } })));
    }
    await chainAllProjectEvents(own.db, project.id);
    return project;
  }

  /** The tree's leaves (level 0, as proofs read them) against the events' canonical forms, in chain order. */
  async function leavesAgainstEvents(projectId: string) {
    const { rows } = await own.db.query<EventRecord>(
      'SELECT e.*, c.prev_hash FROM event_chain c JOIN events e ON e.seq = c.seq WHERE c.project_id = $1 ORDER BY c.chain_pos',
      [projectId],
    );
    const leaf = sourceOf(await getNodes(own.db, projectId, rows.map((_, idx) => ({ level: 0, idx }))));
    return { count: rows.length, mismatched: rows.filter((r, idx) => !leaf(0, idx).equals(leafHash(canonicalEvent(r)))).length };
  }

  const storedLeafNodes = async (projectId: string) =>
    (await own.db.query('SELECT count(*)::int AS n FROM merkle_nodes WHERE project_id = $1 AND level = 0', [projectId])).rows[0].n;

  it('builds the tree from the leaf hashes the sequencer stored: every leaf is its event hashed, and no slice needs a turn', async () => {
    const project = await backlog('stored leaves', 2500);
    const { rows } = await own.db.query('SELECT count(*)::int AS n FROM event_chain WHERE project_id = $1 AND leaf_hash IS NOT NULL', [project.id]);
    expect(rows[0].n).toBe(2500);
    const signer = await complianceSigner(own.db, { env: 'test', masterKey: undefined, databaseUrl: own.url });

    timers.setImmediate.mockClear();
    const r = await issueCheckpoint(own.db, signer, project.id);
    expect(Number(r.issued?.tree_size)).toBe(2500);
    expect(timers.setImmediate).toHaveBeenCalledTimes(0);
    expect(await leavesAgainstEvents(project.id)).toEqual({ count: 2500, mismatched: 0 });
    // The leaves are the chain's; the tree stores only the nodes from level 4 up (2500 leaves
    // make 156 complete subtrees of 16, 78 of 32, and so on).
    expect(await storedLeafNodes(project.id)).toBe(0);
    const { rows: levels } = await own.db.query('SELECT level, count(*)::int AS n FROM merkle_nodes WHERE project_id = $1 GROUP BY level ORDER BY level', [project.id]);
    expect(levels).toEqual([156, 78, 39, 19, 9, 4, 2, 1].map((n, i) => ({ level: 4 + i, n })));
  });

  it('proves inclusion and consistency through the levels it does not store (hashed from their leaves)', async () => {
    const project = await backlog('proofs', 1500);
    const signer = await complianceSigner(own.db, { env: 'test', masterKey: undefined, databaseUrl: own.url });
    const r = await issueCheckpoint(own.db, signer, project.id);
    const root = r.issued!.root_hash;
    expect(root.equals(await rootFromChain(own.db, project.id, 1500))).toBe(true);
    for (const index of [0, 1, 7, 8, 15, 16, 1234, 1490, 1499]) {
      const p = await proveInclusion(own.db, project.id, index, 1500);
      expect(p.root.equals(root)).toBe(true);
      expect(rootFromInclusionProof(index, 1500, p.leafHash, p.proof)?.equals(root)).toBe(true);
      // A proof for another leaf's hash does not lead to the root.
      const other = await proveInclusion(own.db, project.id, (index + 1) % 1500, 1500);
      expect(rootFromInclusionProof(index, 1500, other.leafHash, p.proof)?.equals(root)).toBe(false);
    }
    for (const first of [1, 5, 13, 1000, 1499]) {
      const proof = await proveConsistency(own.db, project.id, first, 1500);
      expect(verifyConsistency({ first, second: 1500, proof }, await rootFromChain(own.db, project.id, first), root)).toBe(true);
    }
  });

  it('writes out rows chained before leaf hashes were stored, at most 50 leaves between two turns of the event loop', async () => {
    const legacy = await backlog('legacy', 2500);
    await own.db.query('UPDATE event_chain SET leaf_hash = NULL WHERE project_id = $1 AND chain_pos > 700', [legacy.id]);
    const signer = await complianceSigner(own.db, { env: 'test', masterKey: undefined, databaseUrl: own.url });

    timers.setImmediate.mockClear();
    const r = await issueCheckpoint(own.db, signer, legacy.id);
    expect(Number(r.issued?.tree_size)).toBe(2500);
    // Reads of 1,000, 1,000 and 500 rows, the first with 300 rows to write out: a turn after every
    // 50th written leaf of a read but its last (5, 19 and 9; each read's own query is a turn as well).
    expect(timers.setImmediate).toHaveBeenCalledTimes(33);
    expect(await leavesAgainstEvents(legacy.id)).toEqual({ count: 2500, mismatched: 0 });
    // Only the leaves written out are stored in the tree (positions 701–2500).
    expect(await storedLeafNodes(legacy.id)).toBe(1800);
  });

  it.each([['stored by the sequencer'], ['written out by the checkpoint']])('covers events whose timestamps the columns cannot carry (before year 1, after 9999), leaves %s', async (leaves) => {
    const project = await createProject(own.db, { name: `far dates, ${leaves}`, plan: 'production' });
    const base = { projectId: project.id, eventType: 'permit.allowed', source: 'test', phase: 'permit' };
    await appendEvents(own.db, [{ ...base, metadata: { i: 0 }, timestamp: new Date('2026-11-27T00:00:00.123Z') }]);
    // Years the application cannot write (PostgreSQL does not parse toISOString's six-digit years),
    // stored directly with their pending-chain rows, as the request path would queue them.
    for (const [i, at] of ['12026-01-01 00:00:00.5+00', '0044-03-15 12:00:00+00 BC'].entries()) {
      await own.db.query(
        `WITH e AS (INSERT INTO events (id, project_id, timestamp, event_type, source, phase) VALUES ($1, $2, $3, 'permit.allowed', 'test', 'permit') RETURNING seq)
         INSERT INTO event_chain_pending (project_id, first_seq, seqs) SELECT $2, seq, ARRAY[seq] FROM e`,
        [`evt_far_${i}_${project.id}`, project.id, at],
      );
    }
    await appendEvents(own.db, [{ ...base, metadata: { i: 3 }, timestamp: new Date('2026-11-27T00:00:01.000Z') }]);
    await chainAllProjectEvents(own.db, project.id);
    if (leaves !== 'stored by the sequencer') await own.db.query('UPDATE event_chain SET leaf_hash = NULL WHERE project_id = $1', [project.id]);
    const signer = await complianceSigner(own.db, { env: 'test', masterKey: undefined, databaseUrl: own.url });
    const r = await issueCheckpoint(own.db, signer, project.id);
    expect(Number(r.issued?.tree_size)).toBe(4);
    expect(await leavesAgainstEvents(project.id)).toEqual({ count: 4, mismatched: 0 });
  });

  it('takes the leaf hashes its caller already holds (an export’s batch, from its chain rows) instead of reading them, and hashes the unstored levels from them', async () => {
    const project = await backlog('known leaves', 100);
    const signer = await complianceSigner(own.db, { env: 'test', masterKey: undefined, databaseUrl: own.url });
    await issueCheckpoint(own.db, signer, project.id);
    const ids = [...[3, 4, 5, 6, 7, 20].map((idx) => ({ level: 0, idx })), { level: 2, idx: 1 }, { level: 4, idx: 0 }];
    const stored = sourceOf(await treeNodes(own.db, project.id, ids));
    // A caller holding leaves 3–7, one of them not the stored one: that one is what comes back,
    // and the node above it is hashed from it; a leaf outside what it holds, and a stored node, are read.
    const marker = Buffer.alloc(32, 7);
    const held = (idx: number) => (idx === 5 ? marker : idx >= 3 && idx <= 7 ? stored(0, idx) : undefined);
    const got = sourceOf(await treeNodes(own.db, project.id, ids, held));
    expect(got(0, 5).equals(marker)).toBe(true);
    expect(got(0, 4).equals(stored(0, 4)) && got(0, 20).equals(stored(0, 20))).toBe(true);
    expect(got(2, 1).equals(nodeHash(nodeHash(stored(0, 4), marker), nodeHash(stored(0, 6), stored(0, 7))))).toBe(true);
    expect(got(2, 1).equals(stored(2, 1))).toBe(false);
    expect(got(4, 0).equals(stored(4, 0))).toBe(true);
    // Held as they are stored, every node is the stored tree's.
    const same = sourceOf(await treeNodes(own.db, project.id, ids, (idx) => (idx >= 3 && idx <= 7 ? stored(0, idx) : undefined)));
    for (const id of ids) expect(same(id.level, id.idx).equals(stored(id.level, id.idx))).toBe(true);
  });
});
