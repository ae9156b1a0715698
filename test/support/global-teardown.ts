import fs from 'node:fs';
import { dropDatabase } from '../../scripts/lib/postgres';
import { scanLogs } from './test-logs';
import type { DevServer } from '../../scripts/lib/temporal-dev-server';
import type { S3Server } from '../../scripts/lib/s3-server';

export default async function globalTeardown(): Promise<void> {
  const logDir = process.env.TEST_LOG_DIR;
  const secrets: [string, string][] = PROVIDER_KEYS_OF_TESTS.map((k) => ['provider key', k]);
  if (process.env.TEST_S3_SECRET_ACCESS_KEY) secrets.push(['archive store secret', process.env.TEST_S3_SECRET_ACCESS_KEY]);
  const scan = logDir ? scanLogs(logDir, secrets) : null;
  const state = (globalThis as Record<string, unknown>).__TOLLGATE_TEST__ as { temporal: DevServer; s3: S3Server | null; bundlePath: string; scratch: string[] } | undefined;
  if (state) {
    await state.temporal.stop();
    await state.s3?.stop();
    fs.rmSync(state.bundlePath, { force: true });
    for (const dir of state.scratch) fs.rmSync(dir, { recursive: true, force: true });
  }
  if (process.env.TEST_SERVER_DATABASE_URL && process.env.TEST_DATABASE_NAME && !process.env.KEEP_TEST_DATABASE) {
    await dropDatabase(process.env.TEST_SERVER_DATABASE_URL, process.env.TEST_DATABASE_NAME);
  }
  if (scan && logDir) {
    process.stdout.write(`secret scan: ${scan.lines} log lines in ${scan.files} files, ${scan.findings.length} findings\n`);
    if (scan.findings.length) {
      throw new Error(`secret scan: secrets or prompt text in the test logs (kept in ${logDir}):\n${scan.findings.slice(0, 20).map((f) => `${f.file}:${f.line} ${f.kind}: ${f.excerpt}`).join('\n')}`);
    }
    if (!process.env.KEEP_TEST_LOGS) fs.rmSync(logDir, { recursive: true, force: true });
  }
}

/**
 * The deployment provider keys the tests configure: test/e2e/executions/helpers.ts (emulatorEnv) and
 * test/e2e/management/providers.test.ts. Project keys carry CANARY_PROVIDER_KEY, found by pattern.
 */
const PROVIDER_KEYS_OF_TESTS = ['test-openai', 'test-anthropic', 'test-gemini', 'test-deepseek', 'test-mistral', 'deployment-openai-key'];
