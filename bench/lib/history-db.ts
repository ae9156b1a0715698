/**
 * A loaded history (bench/lib/call-history.ts) kept between bench runs: BENCH_HISTORY_DB=<name>
 * loads it into that database once and keeps it; each run then works on a copy (`CREATE DATABASE
 * … TEMPLATE`, then the migrations), which retention may change at will. Without a name the
 * history is loaded into the run's own database.
 */
import { Client } from 'pg';
import { createDatabaseIfMissing, withDatabase } from '../../scripts/lib/postgres';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { loadCallHistory, type CallHistory } from './call-history';
import { BENCH_MASTER_KEY } from './stack';

async function admin<T>(adminUrl: string, run: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: adminUrl });
  await c.connect();
  try {
    return await run(c);
  } finally {
    await c.end();
  }
}

/** Loads the history into `database` (created and migrated here) and records it there for later copies. */
async function load(adminUrl: string, database: string, o: { calls: number; days: number; log: (m: string) => void }): Promise<CallHistory> {
  await createDatabaseIfMissing(adminUrl, database);
  const url = withDatabase(adminUrl, database);
  await migrate(url);
  const history = await loadCallHistory(url, { env: 'production', masterKey: BENCH_MASTER_KEY, databaseUrl: url }, { calls: o.calls, days: o.days, now: new Date(), log: o.log });
  const db = createPool(url, 1);
  try {
    await db.query('CREATE TABLE bench_history (doc jsonb NOT NULL)');
    await db.query('INSERT INTO bench_history VALUES ($1)', [JSON.stringify(history)]);
  } finally {
    await db.end();
  }
  return history;
}

/**
 * The database `name` holding a loaded history: loaded there, or with `historyDb` a copy of that
 * kept database (loaded first when missing). Returns its URL and the history it holds.
 */
export async function historyDatabase(o: {
  adminUrl: string;
  name: string;
  historyDb: string;
  calls: number;
  days: number;
  log: (m: string) => void;
}): Promise<{ url: string; history: CallHistory }> {
  const { adminUrl, name, historyDb, log } = o;
  if (!historyDb) return { url: withDatabase(adminUrl, name), history: await load(adminUrl, name, o) };
  const exists = await admin(adminUrl, async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [historyDb])).rows.length > 0);
  if (!exists) {
    log(`loading ${o.calls} calls into ${historyDb} (kept for later runs)`);
    await load(adminUrl, historyDb, o);
  }
  log(`copying ${historyDb}`);
  const t = performance.now();
  // The files copied and synced as they are (FILE_COPY, PostgreSQL 15 and later): copied through
  // the WAL (15's default), the copy left gigabytes of WAL and dirty pages to the checkpoints that
  // followed, in a bench's measured rounds.
  await admin(adminUrl, async (c) => {
    const fileCopy = (await c.query<{ v: number }>("SELECT current_setting('server_version_num')::int AS v")).rows[0].v >= 150000;
    await c.query(`CREATE DATABASE ${name} TEMPLATE ${historyDb}${fileCopy ? ' STRATEGY = FILE_COPY' : ''}`);
  });
  log(`copied in ${((performance.now() - t) / 1000).toFixed(0)} s`);
  const url = withDatabase(adminUrl, name);
  await migrate(url);
  const db = createPool(url, 1);
  try {
    const doc = (await db.query<{ doc: CallHistory }>('SELECT doc FROM bench_history')).rows[0].doc;
    if (doc.rows.calls !== o.calls) log(`note: ${historyDb} holds a history of ${doc.rows.calls} calls, not BENCH_CALLS=${o.calls}`);
    return { url, history: { ...doc, start: new Date(doc.start), end: new Date(doc.end) } };
  } finally {
    await db.end();
  }
}
