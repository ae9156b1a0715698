/**
 * The archive store on an S3-compatible bucket (versitygw, started by the test run's global setup;
 * docs/decisions/archive-store.md): retention streams its archive into the bucket, verifies the
 * object read back from there, then deletes the rows; the archive verifies offline once downloaded;
 * compliance exports keep their files in the bucket and download from it, and an export whose files
 * are still chunks in PostgreSQL downloads the same. A run stopped mid-upload, after the upload or
 * with its object damaged or gone deletes nothing unverified, and finishes when run again.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyExportCommand } from '../../../src/compliance/verify-command';
import { complianceSigner } from '../../../src/integrity/keys';
import { verifierKey } from '../../../src/integrity/note';
import { verifyLog } from '../../../src/integrity/verify-log';
import { ArchiveVerificationError } from '../../../src/retention/archive';
import { runRetention } from '../../../src/retention/run';
import { createTestBucket, type TestBucket } from '../../support/s3';
import { waitUntil } from '../../support/wait';
import { startHarness, type Harness } from '../executions/helpers';
import { makeCalls, writeEvents } from './helpers';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('archive store on S3', () => {
  let h: Harness;
  let bucket: TestBucket;
  let vkey: string;
  const scratch = mkdtempSync(join(tmpdir(), 'tollgate-s3-test-'));
  beforeAll(async () => {
    bucket = await createTestBucket();
    h = await startHarness(bucket.env);
    const signer = await complianceSigner(h.tg.db, h.tg.config);
    vkey = verifierKey(signer.keyName, signer.publicKey32);
  });
  afterAll(async () => {
    await h?.close();
  });

  const deps = () => ({ db: h.tg.db, config: h.tg.config });
  const calls = (key: string, n: number) => makeCalls(h, key, n);
  const records = async (projectId: string) => (await h.tg.db.query<{ id: string }>('SELECT id FROM calls WHERE project_id = $1 ORDER BY seq', [projectId])).rows.map((r) => r.id);
  const archiveRows = async (projectId: string) => (await h.tg.db.query<{ id: string; status: string }>('SELECT id, status FROM archives WHERE project_id = $1', [projectId])).rows;
  /** Writes the object to a file and verifies it as `npm run cli -- verify-export <file> --key <key>` does. */
  const verifyDownloaded = async (key: string) => {
    const file = join(scratch, key.replace(/\//g, '_'));
    writeFileSync(file, await bucket.read(key));
    return verifyExportCommand(file, vkey);
  };

  it('streams the archive into the bucket, verifies it there, deletes the rows, and the downloaded archive verifies offline', async () => {
    const p = await h.project();
    const projectId = p.project.id;
    await calls(p.clientKey, 20);
    await pause(20);
    const cutoff = new Date();
    await pause(20);
    await calls(p.clientKey, 5);
    const before = await records(projectId);

    const report = await runRetention(deps(), { projectId, before: cutoff, now: new Date() });
    const archive = report.projects[0].archive!;
    expect(archive).toMatchObject({ status: 'completed', log_range: { first_index: 0, last_index: 15 }, deleted: { executions: 16, event_chain: 16 } });
    const key = `${projectId}/${archive.id}.tar`;
    expect(archive.path).toBe(`s3://${bucket.bucket}/tollgate/${key}`);
    // One object, the archive: the export files it was built from are gone, nothing went to ARCHIVE_DIR.
    expect(await bucket.keys()).toEqual([key]);
    expect(existsSync(join(process.env.ARCHIVE_DIR!, projectId))).toBe(false);
    const stored = await bucket.read(key);
    expect({ bytes: stored.length, sha256: createHash('sha256').update(stored).digest('hex') }).toEqual({ bytes: archive.bytes, sha256: archive.sha256 });

    expect(await verifyDownloaded(key)).toMatchObject({ ok: true, project_id: projectId, events_verified: 16, failures: [] });
    expect(await records(projectId)).toEqual(before.slice(16));
    const gone = await h.call('GET', `/v1/executions/${before[3]}`, { key: p.clientKey });
    expect(gone.status).toBe(404);
    expect(gone.json.error).toMatchObject({ code: 'archived', details: { archive_id: archive.id } });
    await expect(verifyLog(h.tg.db, projectId)).resolves.toMatchObject({ ok: true, archived_through: 16, events_verified: 9 });
  }, 120_000);

  it('keeps a compliance export in the bucket and downloads it from there; an export whose files are chunks in PostgreSQL downloads the same', async () => {
    const p = await h.project();
    const T = (d: string) => new Date(`2026-03-0${d}T12:00:00Z`);
    await writeEvents(h.tg.db, p.project.id, 2, { timestamp: T('1') });
    await writeEvents(h.tg.db, p.project.id, 5, { timestamp: T('2') });
    const created = await h.call('POST', '/v1/compliance/exports', { key: p.adminKey, body: { window: { since: '2026-03-02T00:00:00Z', until: '2026-03-04T00:00:00Z' } } });
    expect(created.status).toBe(202);
    const id = created.json.id as string;
    const done = await waitUntil(async () => {
      const r = await h.call('GET', `/v1/compliance/exports/${id}`, { key: p.adminKey });
      return ['completed', 'failed'].includes(r.json.status) ? r.json : null;
    }, 60_000, 200);
    expect(done.status).toBe('completed');
    const names = ['checkpoint.note', 'events.ndjson', 'executions.ndjson', 'manifest.note', 'permits.ndjson', 'proofs.ndjson', 'usage.ndjson', 'workflow_intents.ndjson'];
    expect((await bucket.keys()).filter((k) => k.startsWith(`exports/${id}/`))).toEqual(names.map((n) => `exports/${id}/${n}`));
    expect((await h.tg.db.query('SELECT count(*)::int AS n FROM compliance_export_chunks WHERE export_id = $1', [id])).rows[0].n).toBe(0);

    const download = async () => {
      const dl = await fetch(`${h.tg.url}/v1/compliance/exports/${id}/download`, { headers: { authorization: `Bearer ${p.adminKey}` } });
      expect(dl.status).toBe(200);
      const bytes = Buffer.from(await dl.arrayBuffer());
      expect(Number(dl.headers.get('content-length'))).toBe(bytes.length);
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(done.bundle.sha256);
      return bytes;
    };
    const bundle = await download();
    const file = join(scratch, `${id}.tar`);
    writeFileSync(file, bundle);
    expect(verifyExportCommand(file, vkey)).toMatchObject({ ok: true, events_verified: 5, failures: [] });

    // As an export written before the archive store: its files as chunks in PostgreSQL, nothing in the bucket.
    const files = (await h.tg.db.query<{ name: string }>('SELECT name FROM compliance_export_files WHERE export_id = $1', [id])).rows;
    for (const { name } of files) {
      const content = await bucket.read(`exports/${id}/${name}`);
      const half = Math.ceil(content.length / 2);
      const chunks = content.length > 1 ? [content.subarray(0, half), content.subarray(half)] : [content];
      for (const [i, c] of chunks.entries()) {
        await h.tg.db.query('INSERT INTO compliance_export_chunks (export_id, name, chunk, content) VALUES ($1, $2, $3, $4)', [id, name, i, c]);
      }
      await h.tg.db.query(`UPDATE compliance_export_files SET stored_in = 'database', chunks = $3 WHERE export_id = $1 AND name = $2`, [id, name, chunks.length]);
    }
    for (const { name } of files) await bucket.remove(`exports/${id}/${name}`);
    expect((await bucket.keys()).filter((k) => k.startsWith(`exports/${id}/`))).toEqual([]);
    expect((await download()).equals(bundle)).toBe(true);
  }, 120_000);

  it('deletes nothing unless the stored archive verified: stopped mid-upload, after the upload, damaged or gone, and a rerun finishes', async () => {
    const p = await h.project();
    const projectId = p.project.id;
    await calls(p.clientKey, 18);
    await pause(20);
    const cutoff = new Date();
    const ids = await records(projectId);
    const run = (opts: Partial<Parameters<typeof runRetention>[1]> = {}) => runRetention(deps(), { projectId, before: cutoff, now: new Date(), ...opts });
    const stop = (at: string) => (step: string) => {
      if (step === at) throw new Error(`stopped at ${at}`);
    };
    const archiveKeys = async () => (await bucket.keys()).filter((k) => k.startsWith(`${projectId}/`));

    // Killed mid-upload (the archive's stream fails after its first piece): no object, nothing deleted.
    await expect(run({ onStep: stop('uploading') })).rejects.toThrow('stopped at uploading');
    expect(await archiveKeys()).toEqual([]);
    expect(await bucket.openUploads()).toEqual([]);
    expect(await records(projectId)).toEqual(ids);
    const [open] = await archiveRows(projectId);
    expect(open.status).toBe('building');
    const key = `${projectId}/${open.id}.tar`;

    // Stopped once the upload completed, before its check: the object is there, nothing deleted.
    await expect(run({ onStep: stop('archived') })).rejects.toThrow('stopped at archived');
    expect(await archiveKeys()).toEqual([key]);
    expect(await records(projectId)).toEqual(ids);
    expect(await archiveRows(projectId)).toEqual([{ id: open.id, status: 'building' }]);

    // The object in the bucket is damaged between its upload and its check: what is stored is checked, nothing deleted.
    await expect(
      run({
        onStep: async (step) => {
          if (step !== 'archived') return;
          const bytes = await bucket.read(key);
          bytes[bytes.indexOf('call.recorded')] = 'C'.charCodeAt(0);
          await bucket.write(key, bytes);
        },
      }),
    ).rejects.toThrow(ArchiveVerificationError);
    expect(await records(projectId)).toEqual(ids);
    expect(await archiveRows(projectId)).toEqual([{ id: open.id, status: 'building' }]);

    // Verified, then stopped after the first batch of deletions; the object then disappears: the rerun deletes no more.
    await expect(run({ batchSize: 5, onStep: stop('batch') })).rejects.toThrow('stopped at batch');
    expect(await records(projectId)).toEqual(ids.slice(5));
    expect(await archiveRows(projectId)).toEqual([{ id: open.id, status: 'verified' }]);
    const verified = await bucket.read(key);
    await bucket.remove(key);
    await expect(run({ batchSize: 5 })).rejects.toThrow(/is missing: its rows are not deleted/);
    expect(await records(projectId)).toEqual(ids.slice(5));

    // Back in place: the rerun finishes the deletion, and the archive verifies offline.
    await bucket.write(key, verified);
    const done = await run({ batchSize: 5 });
    expect(done.projects[0]).toMatchObject({ outcome: 'archived', archive: { id: open.id, status: 'completed', log_range: { first_index: 0, last_index: 15 } } });
    expect(await records(projectId)).toEqual(ids.slice(16));
    expect(await verifyDownloaded(key)).toMatchObject({ ok: true, events_verified: 16 });
    expect(await archiveKeys()).toEqual([key]);
    expect((await bucket.keys()).filter((k) => k.startsWith(`exports/${open.id}/`))).toEqual([]);
  }, 180_000);
});
