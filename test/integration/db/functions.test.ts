/**
 * The function files of src/db/functions are applied by the migrator after the numbered migrations,
 * each once per text: a fresh database gets all of them, a second run none, and an edited file
 * alone. Runs on a database of its own, since it replaces functions the other tests call.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createDatabaseIfMissing, dropDatabase, withDatabase } from '../../../scripts/lib/postgres';
import { applyFunctions, FUNCTIONS_DIR } from '../../../src/db/apply-functions';
import { migrate } from '../../../src/db/migrate';

const files = fs.readdirSync(FUNCTIONS_DIR).filter((f) => f.endsWith('.sql')).sort();
const names = files.map((f) => f.slice(0, -'.sql'.length));

/** What PostgreSQL stores as the function's source (prosrc): the text between the dollar quotes. */
function bodyOf(text: string): string {
  const start = text.indexOf('$$');
  const end = text.lastIndexOf('$$');
  if (start < 0 || end <= start) throw new Error('no dollar-quoted body');
  return text.slice(start + 2, end);
}

describe('function files (real PostgreSQL)', () => {
  const server = process.env.TEST_SERVER_DATABASE_URL!;
  const database = `${process.env.TEST_DATABASE_NAME}_functions`;
  let url: string;
  let client: Client;
  let firstRun: string[];
  const tempDirs: string[] = [];

  beforeAll(async () => {
    await createDatabaseIfMissing(server, database);
    url = withDatabase(server, database);
    firstRun = await migrate(url);
    client = new Client({ connectionString: url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await dropDatabase(server, database);
    for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true });
  });

  /** A copy of the functions directory, applied, so a test's changes are measured from the files as they are. */
  async function appliedCopy(): Promise<string> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-functions-'));
    tempDirs.push(dir);
    for (const f of files) fs.copyFileSync(path.join(FUNCTIONS_DIR, f), path.join(dir, f));
    await applyFunctions(url, dir);
    return dir;
  }

  async function prosrc(name: string): Promise<string[]> {
    const { rows } = await client.query<{ prosrc: string }>(
      "SELECT prosrc FROM pg_proc WHERE proname = $1 AND pronamespace = 'public'::regnamespace",
      [name],
    );
    return rows.map((r) => r.prosrc);
  }

  async function recorded(): Promise<Map<string, { checksum: string; appliedAt: string }>> {
    const { rows } = await client.query<{ name: string; checksum: string; applied_at: string }>(
      'SELECT name, checksum, applied_at::text FROM db_functions',
    );
    return new Map(rows.map((r) => [r.name, { checksum: r.checksum, appliedAt: r.applied_at }]));
  }

  it('holds the functions the hot path calls', () => {
    expect(names).toEqual(
      expect.arrayContaining(['tollgate_govern_calls', 'tollgate_record_calls', 'tollgate_insert_batch_events', 'tollgate_rate_used', 'tollgate_rate_bucket']),
    );
  });

  it('gives a fresh database every function from its file, one function per file of the same name', async () => {
    expect(firstRun.filter((n) => n.startsWith('functions/'))).toEqual(names.map((n) => `functions/${n}`));
    for (const f of files) {
      const text = fs.readFileSync(path.join(FUNCTIONS_DIR, f), 'utf8');
      expect(text).toMatch(new RegExp(`^CREATE OR REPLACE FUNCTION ${f.slice(0, -4)}\\(`, 'm'));
      expect(await prosrc(f.slice(0, -4))).toEqual([bodyOf(text)]);
    }
  });

  it('records the sha256 of each file', async () => {
    const rows = await recorded();
    expect([...rows.keys()].sort()).toEqual(names);
    for (const f of files) {
      const sha = createHash('sha256').update(fs.readFileSync(path.join(FUNCTIONS_DIR, f))).digest('hex');
      expect(rows.get(f.slice(0, -4))?.checksum).toBe(sha);
    }
  });

  it('leaves only trigger functions to the migrations', async () => {
    const { rows } = await client.query<{ proname: string; rettype: string }>(
      "SELECT proname, prorettype::regtype::text AS rettype FROM pg_proc WHERE pronamespace = 'public'::regnamespace AND NOT proname = ANY($1::text[])",
      [names],
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(r).toEqual({ proname: r.proname, rettype: 'trigger' });
  });

  it('applies nothing on a second run', async () => {
    await appliedCopy(); // the files as they are, should an earlier test have changed one
    const before = await recorded();
    expect(await migrate(url)).toEqual([]);
    expect(await recorded()).toEqual(before);
  });

  it('applies an edited file again, and only that one', async () => {
    const dir = await appliedCopy();
    const before = await recorded();
    const file = path.join(dir, 'tollgate_rate_bucket.sql');
    const edited = fs.readFileSync(file, 'utf8').replace('  SELECT floor(', '  -- edited by the test\n  SELECT floor(');
    expect(edited).toContain('edited by the test');
    fs.writeFileSync(file, edited);

    expect(await migrate(url, () => undefined, { functionsDir: dir })).toEqual(['functions/tollgate_rate_bucket']);
    expect(await prosrc('tollgate_rate_bucket')).toEqual([bodyOf(edited)]);
    const after = await recorded();
    expect(after.get('tollgate_rate_bucket')?.checksum).toBe(createHash('sha256').update(edited).digest('hex'));
    for (const n of names.filter((x) => x !== 'tollgate_rate_bucket')) expect(after.get(n)).toEqual(before.get(n));
    // Still the same function: a two-second window's bucket is the hundredths of seconds over two.
    const { rows } = await client.query<{ b: string }>("SELECT tollgate_rate_bucket('1970-01-01T00:00:10Z', 2)::text AS b");
    expect(rows[0].b).toBe('500');

    expect(await migrate(url, () => undefined, { functionsDir: dir })).toEqual([]);
  });

  it('creates a function again when a migration dropped it, even with its file unchanged', async () => {
    const dir = await appliedCopy();
    await client.query('DROP FUNCTION tollgate_rate_usage(text, jsonb)');
    expect(await applyFunctions(url, dir)).toEqual(['tollgate_rate_usage']);
    expect(await prosrc('tollgate_rate_usage')).toHaveLength(1);
  });

  it('creates a LANGUAGE sql function whose callee comes later in name order', async () => {
    const dir = await appliedCopy();
    fs.writeFileSync(
      path.join(dir, 'tollgate_test_a_caller.sql'),
      'CREATE OR REPLACE FUNCTION tollgate_test_a_caller() RETURNS int LANGUAGE sql AS $$ SELECT tollgate_test_b_callee() + 1; $$;\n',
    );
    fs.writeFileSync(
      path.join(dir, 'tollgate_test_b_callee.sql'),
      'CREATE OR REPLACE FUNCTION tollgate_test_b_callee() RETURNS int LANGUAGE sql AS $$ SELECT 41; $$;\n',
    );
    expect(await applyFunctions(url, dir)).toEqual(['tollgate_test_a_caller', 'tollgate_test_b_callee']);
    const { rows } = await client.query<{ v: number }>('SELECT tollgate_test_a_caller() AS v');
    expect(rows[0].v).toBe(42);

    // A file that is gone leaves no row, so it is applied again should it come back.
    fs.rmSync(path.join(dir, 'tollgate_test_a_caller.sql'));
    expect(await applyFunctions(url, dir)).toEqual([]);
    expect((await recorded()).has('tollgate_test_a_caller')).toBe(false);
    expect((await recorded()).has('tollgate_test_b_callee')).toBe(true);
  });

  it('fails on a broken body and applies none of the run', async () => {
    const dir = await appliedCopy();
    const before = await recorded();
    const good = path.join(dir, 'tollgate_rate_bucket.sql');
    fs.writeFileSync(good, fs.readFileSync(good, 'utf8').replace('  SELECT floor(', '  -- not applied\n  SELECT floor('));
    fs.writeFileSync(
      path.join(dir, 'tollgate_test_broken.sql'),
      'CREATE OR REPLACE FUNCTION tollgate_test_broken() RETURNS int LANGUAGE sql AS $$ SELECT count(*)::int FROM no_such_table; $$;\n',
    );
    await expect(applyFunctions(url, dir)).rejects.toThrow(/no_such_table/);
    expect(await prosrc('tollgate_test_broken')).toEqual([]);
    expect((await prosrc('tollgate_rate_bucket'))[0]).not.toContain('not applied');
    expect(await recorded()).toEqual(before);
  });

  it('applies a changed file once when two processes start at the same time', async () => {
    const dir = await appliedCopy();
    const file = path.join(dir, 'tollgate_rate_used.sql');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('BEGIN\n', 'BEGIN\n  -- raced\n'));
    const [a, b] = await Promise.all([applyFunctions(url, dir), applyFunctions(url, dir)]);
    expect([...a, ...b]).toEqual(['tollgate_rate_used']);
    expect((await prosrc('tollgate_rate_used'))[0]).toContain('-- raced');
  });
});
