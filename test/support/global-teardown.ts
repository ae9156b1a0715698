import fs from 'node:fs';
import { dropDatabase } from '../../scripts/lib/postgres';
import type { DevServer } from '../../scripts/lib/temporal-dev-server';

export default async function globalTeardown(): Promise<void> {
  const state = (globalThis as Record<string, unknown>).__TOLLGATE_TEST__ as { temporal: DevServer; bundlePath: string } | undefined;
  if (state) {
    await state.temporal.stop();
    fs.rmSync(state.bundlePath, { force: true });
  }
  if (process.env.TEST_SERVER_DATABASE_URL && process.env.TEST_DATABASE_NAME && !process.env.KEEP_TEST_DATABASE) {
    await dropDatabase(process.env.TEST_SERVER_DATABASE_URL, process.env.TEST_DATABASE_NAME);
  }
}
