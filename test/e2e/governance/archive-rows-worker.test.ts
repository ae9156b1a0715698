/**
 * An archive's row parts written in a worker thread (src/retention/archive-rows.ts): the archive
 * is the same, file for file, as the one written in the archive's own thread (all but the
 * manifest, which carries the write's time), and it reads back and verifies; so does one paced
 * by RETENTION_CPU_SHARE (src/retention/pace.ts).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readTar } from '../../../src/compliance/tar';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import { latestCheckpoint } from '../../../src/db/repositories/integrity-log';
import { complianceSigner } from '../../../src/integrity/keys';
import { issueCheckpoint } from '../../../src/integrity/log';
import { verifyStoredArchive, writeArchive } from '../../../src/retention/archive';
import { Pace } from '../../../src/retention/pace';
import { planArchive } from '../../../src/retention/plan';
import { startHarness, type Harness } from '../executions/helpers';
import { makeCalls } from './helpers';

describe('archive row parts in a worker thread', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ ARCHIVE_DIR: mkdtempSync(join(tmpdir(), 'tollgate-archives-')) });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('writes the same archive as the archive’s own thread, and it verifies', async () => {
    const p = await h.project();
    const projectId = p.project.id;
    await makeCalls(h, p.clientKey, 20);
    const signer = await complianceSigner(h.tg.db, h.tg.config);
    for (let i = 0; i < 100 && Number((await latestCheckpoint(h.tg.db, projectId))?.tree_size ?? 0) < 16; i++) {
      await chainAllProjectEvents(h.tg.db, projectId);
      await issueCheckpoint(h.tg.db, signer, projectId);
      await new Promise((r) => setTimeout(r, 50));
    }
    const deps = { db: h.tg.db, config: h.tg.config };
    const a = await planArchive(deps, projectId, new Date());
    expect(a).not.toBeNull();
    const files = (rowsInWorker: boolean, pace?: Pace) => async () => {
      const w = await writeArchive(deps, a!, { now: new Date(), rowsInWorker }, pace);
      await verifyStoredArchive(deps, a!, w.bytes, pace);
      const tar = readTar(readFileSync(a!.path));
      tar.delete('manifest.note');
      return Object.fromEntries([...tar.entries()].map(([name, body]) => [name, body.toString('base64')]));
    };
    const inThread = await files(false)();
    const inWorker = await files(true)();
    expect(Object.keys(inThread).sort()).toEqual(['checkpoint.note', 'events.ndjson', 'executions.ndjson', 'permits.ndjson', 'proofs.ndjson', 'usage.ndjson']);
    expect(inWorker).toEqual(inThread);
    // Paced (RETENTION_CPU_SHARE below 1), on a clock on which every piece of work takes a slice:
    // a pause after each, the same archive.
    const pauses: number[] = [];
    let t = 0;
    const pace = new Pace(0.5, () => (t += 20), async (ms) => void pauses.push(ms));
    expect(await files(false, pace)()).toEqual(inThread);
    expect(pauses.length).toBeGreaterThan(3);
    expect(pauses.every((ms) => ms === 20)).toBe(true);
    expect(Buffer.from(inWorker['executions.ndjson'], 'base64').toString('utf8').trim().split('\n').length).toBeGreaterThanOrEqual(16);
  });
});
