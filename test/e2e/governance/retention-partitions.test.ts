/**
 * Retention over week partitions (src/retention/partitions.ts): once every project's retention has
 * passed a week, retention archives and verifies its calls, deletes them, and drops the week's
 * partitions of permits and call records; the archive still verifies offline after its partition
 * is gone, and a read of an archived call answers 404 `archived`. On a database of the file's own:
 * the drop depends on every project of the database having a retention.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyExportCommand } from '../../../src/compliance/verify-command';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import { partitionName, weekPartitions, weekStart } from '../../../src/db/partitions';
import { complianceSigner } from '../../../src/integrity/keys';
import { issueCheckpoint } from '../../../src/integrity/log';
import { latestCheckpoint } from '../../../src/db/repositories/integrity-log';
import { verifierKey } from '../../../src/integrity/note';
import { runRetention } from '../../../src/retention/run';
import { createOwnDatabase, type OwnDatabase } from '../../support/own-database';
import { say, startHarness, type Harness } from '../executions/helpers';
import { makeCalls } from './helpers';

const WEEK = 7 * 86_400_000;

describe('retention drops the week partitions it has emptied', () => {
  let own: OwnDatabase;
  let h: Harness;
  let archiveDir: string;
  beforeAll(async () => {
    own = await createOwnDatabase('retention_partitions');
    archiveDir = mkdtempSync(join(tmpdir(), 'tollgate-archives-'));
    h = await startHarness({ DATABASE_URL: own.url, ARCHIVE_DIR: archiveDir });
  });
  afterAll(async () => {
    await h?.close();
    await own?.drop();
  });

  it("archives a project's calls, deletes them, drops their week, and the archive verifies after the drop", async () => {
    const p = await h.project();
    const projectId = p.project.id;
    await makeCalls(h, p.clientKey, 16);
    const { rows: records } = await h.tg.db.query<{ id: string; permit_id: string }>('SELECT id, permit_id FROM calls WHERE project_id = $1', [projectId]);
    expect(records).toHaveLength(16);
    // Every record chained and under a checkpoint, as the background rounds would leave them.
    const signer = await complianceSigner(h.tg.db, h.tg.config);
    for (let i = 0; i < 100 && Number((await latestCheckpoint(h.tg.db, projectId))?.tree_size ?? 0) < 16; i++) {
      await chainAllProjectEvents(h.tg.db, projectId);
      await issueCheckpoint(h.tg.db, signer, projectId);
    }

    const thisWeek = weekStart(new Date());
    const names = async () => [...(await weekPartitions(h.tg.db, 'calls')), ...(await weekPartitions(h.tg.db, 'permits'))].map((w) => w.name);
    expect(await names()).toEqual(expect.arrayContaining([partitionName('calls', thisWeek), partitionName('permits', thisWeek)]));

    // Every project of the database keeps its calls one day; the run sees the clock three weeks on.
    await h.tg.db.query('UPDATE projects SET retention_days = 1');
    const later = new Date(thisWeek.getTime() + 3 * WEEK);
    const report = await runRetention({ db: h.tg.db, config: h.tg.config }, { now: later });
    const run = report.projects.find((r) => r.project_id === projectId)!;
    expect(run).toMatchObject({ outcome: 'archived', archive: { status: 'completed', log_range: { first_index: 0, last_index: 15 } } });
    expect(report.partitions_dropped).toEqual(expect.arrayContaining([partitionName('permits', thisWeek), partitionName('calls', thisWeek)]));
    expect(await names()).not.toContain(partitionName('calls', thisWeek));
    // The weeks not yet past the retention stay.
    expect(await names()).toContain(partitionName('calls', new Date(thisWeek.getTime() + 3 * WEEK)));

    // The archive verifies offline, from its file, after the rows' partitions are gone.
    const archive = run.archive!;
    expect(existsSync(archive.path)).toBe(true);
    expect(verifyExportCommand(archive.path, verifierKey(signer.keyName, signer.publicKey32))).toMatchObject({ ok: true, project_id: projectId, events_verified: 16, failures: [] });

    // A read of an archived call answers 404 archived with the archive's id.
    for (const path of [`/v1/executions/${records[0].id}`, `/v1/permits/${records[0].permit_id}`]) {
      const res = await h.call('GET', path, { key: p.clientKey });
      expect({ path, status: res.status, code: res.json.error?.code, archive: res.json.error?.details?.archive_id }).toEqual({ path, status: 404, code: 'archived', archive: archive.id });
    }

    // A call made now, in the week whose partitions were dropped (only the retention run's clock
    // jumped ahead), is still served: its rows go to the DEFAULT partition.
    const after = await h.call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('after the drop'), routing: { provider: 'openai', model: 'gpt-4o-mini' } } });
    expect(after.status).toBe(200);
    const where = async () => (await h.tg.db.query<{ p: string }>('SELECT tableoid::regclass::text AS p FROM calls WHERE id = $1', [after.json.id])).rows;
    // The record is written by the batcher just after the response.
    for (let i = 0; i < 200 && (await where()).length === 0; i++) await new Promise((r) => setTimeout(r, 25));
    expect(await where()).toEqual([{ p: 'calls_default' }]);
  });
});
