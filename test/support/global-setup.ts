/**
 * Runs once per `jest` run: one Temporal dev server, one S3-compatible server (versitygw), one
 * fresh PostgreSQL database with every migration, and the workflow code bundled once. Test files
 * read the results from process.env (inherited by jest's workers) and start their own in-process
 * Tollgate on a private task queue.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureTemporalCli } from '../../scripts/lib/temporal-cli';
import { ensureOtelCollector } from '../../scripts/lib/otel-collector';
import { createDatabaseIfMissing, ensurePostgres, withDatabase } from '../../scripts/lib/postgres';
import { freePort, startTemporalDevServer } from '../../scripts/lib/temporal-dev-server';
import { ensureVersitygw, startS3Server, type S3Server } from '../../scripts/lib/s3-server';
import { migrate } from '../../src/db/migrate';
import { bundleWorkflows } from '../../src/temporal/worker';

export default async function globalSetup(): Promise<void> {
  const log = (msg: string) => process.stdout.write(`${msg}\n`);
  const dataDir = path.resolve(__dirname, '..', '..', '.data');
  fs.mkdirSync(dataDir, { recursive: true });
  const cli = await ensureTemporalCli(log);
  // The OTLP receiver test/e2e/telemetry/otlp-receiver.test.ts starts: built here once per machine.
  // Without Go that one test fails saying what to install; the rest of the suite runs.
  try {
    process.env.OTELCOL_PATH = ensureOtelCollector(log);
  } catch (err) {
    process.env.OTELCOL_UNAVAILABLE = (err as Error).message;
  }
  const serverUrl = await ensurePostgres(dataDir, log);
  const database = `tollgate_test_${Date.now()}_${process.pid}`;
  await createDatabaseIfMissing(serverUrl, database);
  const databaseUrl = withDatabase(serverUrl, database);
  await migrate(databaseUrl);

  const temporal = await startTemporalDevServer({
    cli,
    port: await freePort(),
    logFile: fs.createWriteStream(path.join(dataDir, 'test-temporal.log'), { flags: 'w' }),
  });

  // The archive store: a directory of this run unless a test opts into the S3 server (test/support/s3.ts).
  const archiveDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-test-archives-'));
  for (const name of Object.keys(process.env)) if (name.startsWith('ARCHIVE_S3_')) delete process.env[name];
  // The S3-compatible server the archive store's S3 tests use, built here once per machine. Without
  // Go those tests fail saying what to install (test/support/s3.ts); the rest of the suite runs.
  const s3DataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-test-s3-'));
  let s3: S3Server | null = null;
  try {
    s3 = await startS3Server({
      bin: ensureVersitygw(log),
      port: await freePort(),
      dataDir: s3DataDir,
      accessKeyId: `test-${randomBytes(6).toString('hex')}`,
      secretAccessKey: randomBytes(24).toString('base64url'),
      logFile: fs.createWriteStream(path.join(dataDir, 'test-s3.log'), { flags: 'w' }),
    });
  } catch (err) {
    process.env.TEST_S3_UNAVAILABLE = (err as Error).message;
  }

  const bundlePath = path.join(os.tmpdir(), `tollgate-workflows-${process.pid}.js`);
  fs.writeFileSync(bundlePath, await bundleWorkflows());

  // In-process Tollgates log into files here; the teardown scans them for secrets (test/support/test-logs.ts).
  process.env.TEST_LOG_DIR ??= path.join(dataDir, 'test-logs', database);
  process.env.TEST_SERVER_DATABASE_URL = serverUrl;
  process.env.TEST_DATABASE_NAME = database;
  process.env.DATABASE_URL = databaseUrl;
  process.env.TEMPORAL_ADDRESS = temporal.address;
  process.env.TEMPORAL_WORKFLOW_BUNDLE = bundlePath;
  process.env.TEMPORAL_CLI_PATH = cli;
  process.env.ARCHIVE_DIR = archiveDir;
  if (s3) {
    process.env.TEST_S3_ENDPOINT = s3.endpoint;
    process.env.TEST_S3_REGION = s3.region;
    process.env.TEST_S3_ACCESS_KEY_ID = s3.accessKeyId;
    process.env.TEST_S3_SECRET_ACCESS_KEY = s3.secretAccessKey;
  }
  (globalThis as Record<string, unknown>).__TOLLGATE_TEST__ = { temporal, s3, bundlePath, scratch: [archiveDir, s3DataDir] };
}
