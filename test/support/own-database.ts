/**
 * A migrated database of a test file's own on the test run's PostgreSQL server, for tests that
 * must not share the run's database (a key rotation changes every project's signing key; the
 * in-process Tollgates of other test files chain every project's pending events).
 */
import { createDatabaseIfMissing, dropDatabase, withDatabase } from '../../scripts/lib/postgres';
import { migrate } from '../../src/db/migrate';
import { createPool, type Db } from '../../src/db/pool';

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

/**
 * A database of the test file's own and a pool on it, created before the file's tests and dropped
 * after them (the hooks are registered here); read `.db` and `.url` inside tests.
 */
export function ownDatabasePool(suffix: string, poolSize = 4): { readonly db: Db; readonly url: string } {
  let own: OwnDatabase | undefined;
  let db: Db | undefined;
  beforeAll(async () => {
    own = await createOwnDatabase(suffix);
    db = createPool(own.url, poolSize);
  });
  afterAll(async () => {
    await db?.end();
    await own?.drop();
  });
  return {
    get db() {
      if (!db) throw new Error('the own database is created in beforeAll');
      return db;
    },
    get url() {
      if (!own) throw new Error('the own database is created in beforeAll');
      return own.url;
    },
  };
}
