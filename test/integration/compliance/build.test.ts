/**
 * Building an export's events part (src/compliance/build.ts) writes every event out with its
 * inclusion proof; the export activities run in the API process unless the worker runs apart, so
 * the loop lets the event loop run between slices of 50 events. On a database of its own, so no
 * other test file's Tollgate checkpoints or exports these events.
 */
import { appendEvents } from '../../../src/db/repositories/events';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import { insertExport, listExportFiles } from '../../../src/db/repositories/compliance-exports';
import { readTar } from '../../../src/compliance/tar';
import { createProject } from '../../../src/db/repositories/projects';
import { buildExportPart, exportBundle, prepareExport } from '../../../src/compliance/build';
import { ownDatabasePool } from '../../support/own-database';

// Counts the turns the build gives the event loop; the turns themselves still happen.
jest.mock('node:timers/promises', () => {
  const actual = jest.requireActual<typeof import('node:timers/promises')>('node:timers/promises');
  return { ...actual, setImmediate: jest.fn(actual.setImmediate) };
});
// eslint-disable-next-line @typescript-eslint/no-require-imports
const timers = require('node:timers/promises') as { setImmediate: jest.Mock };

describe('export events part over many events', () => {
  const own = ownDatabasePool('export_turns');

  it('writes at most 50 events between two turns of the event loop, and every event with its proof', async () => {
    const project = await createProject(own.db, { name: 'export backlog', plan: 'production' });
    const since = new Date(Date.now() - 60_000);
    for (let i = 0; i < 11; i++) {
      await appendEvents(own.db, Array.from({ length: 400 }, (_, j) => ({ projectId: project.id, eventType: 'permit.allowed', source: 'test', phase: 'permit', metadata: { i, j } })));
    }
    await chainAllProjectEvents(own.db, project.id);
    const row = await insertExport(own.db, { id: `exp_turns_${project.id}`, projectId: project.id, since, until: new Date(Date.now() + 60_000), include: ['events'], requestedBy: 'test' });
    // The export files go to the run's archive directory (test/support/global-setup.ts).
    const deps = { db: own.db, config: { env: 'test' as const, masterKey: undefined, databaseUrl: own.url, archiveStore: { kind: 'directory' as const, dir: process.env.ARCHIVE_DIR! } } };
    await prepareExport(deps, row.id);

    timers.setImmediate.mockClear();
    expect(await buildExportPart(deps, row.id, 'events')).toBe(4400);
    // Batches of 2,000, 2,000 and 400 events: a turn before the 51st, 101st, … event of each (39, 39 and 7).
    expect(timers.setImmediate).toHaveBeenCalledTimes(85);
    // Each file written a batch at a time: three chunks each, never whole in memory.
    expect((await listExportFiles(own.db, row.id)).map((f) => [f.name, f.chunks, f.records])).toEqual([
      ['checkpoint.note', 1, 1],
      ['events.ndjson', 3, 4400],
      ['proofs.ndjson', 3, 4400],
    ]);
    const bundle = await exportBundle(deps, row.id);
    const pieces: Buffer[] = [];
    for await (const piece of bundle.pieces) pieces.push(piece);
    const tar = Buffer.concat(pieces);
    expect(tar.length).toBe(bundle.bytes);
    const files = readTar(tar);
    expect(files.get('events.ndjson')?.toString('utf8').trim().split('\n')).toHaveLength(4400);
    expect(files.get('proofs.ndjson')?.toString('utf8').trim().split('\n')).toHaveLength(4400);
  });
});
