/**
 * Retention killed (SIGKILL) in the middle of uploading its archive to the S3 bucket, the operator's
 * CLI process gone with a multipart upload left open: nothing was deleted, no archive object exists,
 * and the next run rebuilds and uploads the archive, verifies it from the bucket, aborts the dead
 * upload, and deletes the rows. The kill lands by signal, not by time: a loopback proxy in front of
 * the S3 server holds back the archive's second part and tells the test, which then kills.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { verifyExportCommand } from '../../../src/compliance/verify-command';
import { createPool } from '../../../src/db/pool';
import { createProject } from '../../../src/db/repositories/projects';
import { complianceSigner } from '../../../src/integrity/keys';
import { verifierKey } from '../../../src/integrity/note';
import { runRetention } from '../../../src/retention/run';
import { SOURCE_NODE_ARGS } from '../../../scripts/lib/source-node-args';
import { createTestBucket } from '../../support/s3';
import { testConfig } from '../../support/tollgate';
import { writeEvents } from './helpers';

jest.setTimeout(240_000);

const ROOT = path.resolve(__dirname, '../../..');

/** Forwards every request to `target` except the first that `hold` picks: that one is never answered, and `held` resolves. */
async function holdingProxy(target: string, hold: (req: http.IncomingMessage) => boolean) {
  const upstream = new URL(target);
  let release!: (url: string) => void;
  const held = new Promise<string>((resolve) => (release = resolve));
  let holding = false;
  const server = http.createServer((req, res) => {
    if (!holding && hold(req)) {
      holding = true;
      req.resume();
      release(req.url!);
      return;
    }
    // `expect` is never signed (SigV4): dropped, so the proxy need not relay 100 Continue.
    const { expect: _expect, ...headers } = req.headers;
    const out = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('retention killed mid-upload to S3', () => {
  const db = createPool(process.env.DATABASE_URL!, 4);
  let child: ChildProcess | null = null;
  afterAll(async () => {
    child?.kill('SIGKILL');
    await db.end();
  });

  it('deletes nothing, and the next run uploads, verifies and deletes', async () => {
    const bucket = await createTestBucket();
    const config = testConfig(bucket.env);
    const project = await createProject(db, { name: `archive-kill-${Date.now()}`, plan: 'production' });
    const projectId = project.id;
    // About 9 MiB of archive: two 5 MiB parts.
    const total = 9600;
    for (let i = 0; i < total; i += 1600) await writeEvents(db, projectId, 1600, { timestamp: new Date('2026-01-01T00:00:00Z'), metadata: { note: 'z'.repeat(300) } });
    const count = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE project_id = $1', [projectId])).rows[0].n;
    const before = '2026-02-01T00:00:00Z';

    const archivePart = new RegExp(`^/${bucket.bucket}/${bucket.prefix}${projectId}/arch_[^/?]+\\.tar\\?(?:.*&)?partNumber=2(?:&|$)`);
    const proxy = await holdingProxy(bucket.env.ARCHIVE_S3_ENDPOINT, (req) => req.method === 'PUT' && archivePart.test(req.url!));
    try {
      child = spawn(process.execPath, [...SOURCE_NODE_ARGS, 'src/cli/index.ts', 'retention', 'run', '--project', projectId, '--before', before], {
        cwd: ROOT,
        env: { ...process.env, ...bucket.env, ARCHIVE_S3_ENDPOINT: proxy.url },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      const exited = new Promise<void>((resolve) => child!.once('exit', () => resolve()));
      await Promise.race([proxy.held, exited.then(() => Promise.reject(new Error('the retention run ended before its second part')))]);
      child.kill('SIGKILL');
      await exited;
      child = null;
    } finally {
      await proxy.close();
    }

    // Killed mid-upload: the archive is still building, its upload open, no object, every row there.
    const { rows: archives } = await db.query<{ id: string; status: string }>('SELECT id, status FROM archives WHERE project_id = $1', [projectId]);
    expect(archives).toEqual([{ id: expect.any(String), status: 'building' }]);
    const key = `${projectId}/${archives[0].id}.tar`;
    expect(await bucket.openUploads()).toContain(key);
    expect(await bucket.keys()).not.toContain(key);
    expect(await count()).toBe(total);

    // The next run finishes the job: uploads, verifies from the bucket, aborts the dead upload, deletes.
    const report = await runRetention({ db, config }, { projectId, before: new Date(before), now: new Date() });
    expect(report.projects[0]).toMatchObject({ outcome: 'archived', archive: { id: archives[0].id, status: 'completed', log_range: { first_index: 0, last_index: total - 1 }, deleted: { events: total } } });
    expect(report.projects[0].archive!.bytes).toBeGreaterThan(5 * 1024 * 1024);
    expect(await count()).toBe(0);
    expect(await bucket.openUploads()).toEqual([]);
    expect(await bucket.keys()).toEqual([key]);

    const file = path.join(mkdtempSync(path.join(tmpdir(), 'tollgate-archive-kill-')), 'archive.tar');
    writeFileSync(file, await bucket.read(key));
    const signer = await complianceSigner(db, config);
    expect(verifyExportCommand(file, verifierKey(signer.keyName, signer.publicKey32))).toMatchObject({ ok: true, project_id: projectId, events_verified: total, failures: [] });
  });
});
