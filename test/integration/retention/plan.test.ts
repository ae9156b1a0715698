/**
 * Planning an archive (src/retention/plan.ts) chains the leaves still pending from before the
 * cutoff, so the archive reaches them, and leaves the newer pending ones to the sequencer: under
 * traffic some always wait, and chaining until none did competed with the sequencer for seconds.
 * On a database of its own: no sequencer chains these events meanwhile.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appendEvents } from '../../../src/db/repositories/events';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import { createProject } from '../../../src/db/repositories/projects';
import { planArchive } from '../../../src/retention/plan';
import { ownDatabasePool } from '../../support/own-database';

describe('planning an archive', () => {
  const own = ownDatabasePool('retention_plan');
  const deps = () => ({
    db: own.db,
    config: { env: 'test' as const, masterKey: undefined, databaseUrl: own.url, retention: {}, archiveStore: { kind: 'directory' as const, dir: mkdtempSync(join(tmpdir(), 'tollgate-plan-')) } },
  });
  const HOUR = 3_600_000;

  async function events(projectId: string, n: number, at: Date) {
    await appendEvents(own.db, Array.from({ length: n }, (_, i) => ({ projectId, eventType: 'permit.allowed', source: 'test', phase: 'permit', metadata: { i }, timestamp: at })));
  }
  const pending = async (projectId: string) =>
    Number((await own.db.query<{ n: string }>('SELECT coalesce(sum(cardinality(seqs)), 0) AS n FROM event_chain_pending WHERE project_id = $1', [projectId])).rows[0].n);
  const chained = async (projectId: string) => Number((await own.db.query<{ n: string }>('SELECT count(*) AS n FROM event_chain WHERE project_id = $1', [projectId])).rows[0].n);

  it('leaves the leaves pending from after the cutoff to the sequencer', async () => {
    const project = await createProject(own.db, { name: 'pending after', plan: 'production' });
    const now = Date.now();
    await events(project.id, 32, new Date(now - 2 * HOUR));
    await chainAllProjectEvents(own.db, project.id);
    await events(project.id, 5, new Date(now));
    expect(await pending(project.id)).toBe(5);

    const a = await planArchive(deps(), project.id, new Date(now - HOUR));
    expect(a).toMatchObject({ first_index: 0, last_index: 31 });
    expect(await pending(project.id)).toBe(5);
    expect(await chained(project.id)).toBe(32);
  });

  it('chains the leaves pending from before the cutoff, and the archive reaches them', async () => {
    const project = await createProject(own.db, { name: 'pending before', plan: 'production' });
    const now = Date.now();
    await events(project.id, 16, new Date(now - 2 * HOUR));
    await chainAllProjectEvents(own.db, project.id);
    await events(project.id, 16, new Date(now - 2 * HOUR));
    expect(await pending(project.id)).toBe(16);

    const a = await planArchive(deps(), project.id, new Date(now - HOUR));
    expect(a).toMatchObject({ first_index: 0, last_index: 31 });
    expect(await pending(project.id)).toBe(0);
  });

  it('ends before the first leaf at or after the cutoff, found past the first chunk of the chain', async () => {
    const project = await createProject(own.db, { name: 'long chain', plan: 'production' });
    const now = Date.now();
    // More leaves before the cutoff than one read of the chain takes.
    for (let i = 0; i < 11; i++) await events(project.id, 500, new Date(now - 2 * HOUR));
    await events(project.id, 20, new Date(now));
    await chainAllProjectEvents(own.db, project.id);

    const a = await planArchive(deps(), project.id, new Date(now - HOUR));
    // 5,500 leaves before the cutoff, rounded down to a multiple of 16.
    expect(a).toMatchObject({ first_index: 0, last_index: 5488 - 1 });
  });
});
