/**
 * Applies the SQL functions of `src/db/functions/` (one file per function, holding its current
 * `CREATE OR REPLACE FUNCTION`), after the numbered migrations. A file is applied when its sha256
 * differs from the one recorded in `db_functions`, or when no function of its name exists (a
 * numbered migration dropped it), so a change to a function is an edit of its one file rather than
 * a new migration re-copying the whole body.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';

export const FUNCTIONS_DIR = path.join(__dirname, 'functions');

/**
 * Key of the transaction advisory lock this step runs under, so two processes starting at once do
 * not both replace the functions. Its own key: node-pg-migrate's lock covers the numbered
 * migrations only and is released before this step.
 */
const FUNCTIONS_LOCK_KEY = 7241865325823965n;

export interface FunctionFile {
  /** The file name without `.sql`: the name of the function it creates. */
  name: string;
  text: string;
  checksum: string;
}

/** The directory's `.sql` files in name order, with their text and sha256. */
export function readFunctionFiles(dir: string): FunctionFile[] {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((f) => {
      const bytes = fs.readFileSync(path.join(dir, f));
      return { name: f.slice(0, -'.sql'.length), text: bytes.toString('utf8'), checksum: createHash('sha256').update(bytes).digest('hex') };
    });
}

/** Applies the files of `dir` that changed since they were last applied; returns their names. */
export async function applyFunctions(databaseUrl: string, dir: string = FUNCTIONS_DIR, log: (msg: string) => void = () => undefined): Promise<string[]> {
  const files = readFunctionFiles(dir);
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [FUNCTIONS_LOCK_KEY.toString()]);
    // Created here, not by a numbered migration, as node-pg-migrate creates its own pgmigrations.
    await client.query(`CREATE TABLE IF NOT EXISTS db_functions (
      name text PRIMARY KEY,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const recorded = new Map(
      (await client.query<{ name: string; checksum: string }>('SELECT name, checksum FROM db_functions')).rows.map((r) => [r.name, r.checksum]),
    );
    const existing = new Set(
      (await client.query<{ proname: string }>('SELECT proname FROM pg_proc WHERE pronamespace = current_schema()::regnamespace')).rows.map((r) => r.proname),
    );
    const changed = files.filter((f) => recorded.get(f.name) !== f.checksum || !existing.has(f.name));
    if (changed.length > 0) {
      // A LANGUAGE sql body is checked at creation, so a function calling one that is new in the
      // same change would fail if created first. The first pass creates every changed function
      // unchecked (as pg_dump restores them); the second replaces each again with the check on,
      // when everything it calls exists, so a broken body still fails here and not at call time.
      await client.query('SET LOCAL check_function_bodies = off');
      for (const f of changed) await client.query(f.text);
      await client.query('SET LOCAL check_function_bodies = on');
      for (const f of changed) await client.query(f.text);
      await client.query(
        `INSERT INTO db_functions (name, checksum) SELECT * FROM unnest($1::text[], $2::text[])
         ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()`,
        [changed.map((f) => f.name), changed.map((f) => f.checksum)],
      );
    }
    // A file that is gone leaves no row behind, so it is applied again if it comes back.
    await client.query('DELETE FROM db_functions WHERE name <> ALL($1::text[])', [files.map((f) => f.name)]);
    await client.query('COMMIT');
    for (const f of changed) log(`applied function ${f.name}`);
    return changed.map((f) => f.name);
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    await client.end();
  }
}
