/**
 * A migrated database of a test file's own on the test run's PostgreSQL server, for tests that
 * must not share the run's database (a key rotation changes every project's signing key; the
 * in-process Tollgates of other test files chain every project's pending events).
 */
import { createDatabaseIfMissing, dropDatabase, withDatabase } from '../../scripts/lib/postgres';
import { migrate } from '../../src/db/migrate';

export interface OwnDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function createOwnDatabase(suffix: string): Promise<OwnDatabase> {
  const server = process.env.TEST_SERVER_DATABASE_URL!;
  const name = `${process.env.TEST_DATABASE_NAME}_${suffix}`;
  await createDatabaseIfMissing(server, name);
  const url = withDatabase(server, name);
  await migrate(url);
  return { url, drop: () => dropDatabase(server, name) };
}
