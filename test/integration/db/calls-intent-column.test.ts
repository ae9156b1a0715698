/**
 * The call record's intent column (`calls.intent_id`, migration 0360_calls_intent_id): on a
 * database as the migration finds it (column `workflow_intent_id`, its index named after the
 * workflow), a call row keeps its intent through the rename, every copy of the index takes the
 * column's name, a second run does nothing, Down restores the old names, and the record's hashed
 * leaf is the same text before and after (its member keeps the old name); a week attached later
 * names its copy of the index after the new column (src/db/partitions.ts).
 */
import { Pool } from 'pg';
import { createOwnDatabase, type OwnDatabase } from '../../support/own-database';
import { migrate, MIGRATIONS_DIR } from '../../../src/db/migrate';
import { readRecordLeafSourcesOfSeqs, recordLeafCanonical } from '../../../src/db/repositories/record-leaf-text';
import { ensureWeekPartitions } from '../../../src/db/partitions';

async function migrateDownOne(url: string): Promise<string[]> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { runner } = require('node-pg-migrate') as typeof import('node-pg-migrate');
  const done = await runner({ databaseUrl: url, dir: MIGRATIONS_DIR, direction: 'down', migrationsTable: 'pgmigrations', count: 1, checkOrder: false, log: () => undefined });
  return done.map((m) => m.name);
}

/** The names of the indexes of calls and its partitions that cover the intent column, parent first. */
async function intentIndexes(db: Pool): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
      WHERE (x.indrelid = 'calls'::regclass OR x.indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'calls'::regclass))
        AND x.indpred IS NOT NULL AND pg_get_indexdef(x.indexrelid) ~ 'intent_id IS NOT NULL'
      ORDER BY x.indrelid <> 'calls'::regclass, c.relname`,
  );
  return rows.map((r) => r.name);
}

describe('migration 0360: calls.workflow_intent_id becomes intent_id', () => {
  let own: OwnDatabase;
  let db: Pool;
  beforeAll(async () => {
    own = await createOwnDatabase('intent_column');
    db = new Pool({ connectionString: own.url, max: 1 });
  });
  afterAll(async () => {
    await db.end();
    await own.drop();
  });

  it('keeps a call row and its leaf, renames every copy of the index, runs once, and goes down and up again', async () => {
    expect(await migrateDownOne(own.url)).toEqual(['0360_calls_intent_id']);
    const before = await intentIndexes(db);
    expect(before[0]).toBe('calls_project_workflow_idx');
    expect(before.slice(1).every((n) => n.endsWith('_project_id_workflow_intent_id_created_at_idx'))).toBe(true);

    await db.query(`INSERT INTO projects (id, name) VALUES ('prj_intent_col', 'intent column')`);
    await db.query(
      `INSERT INTO calls (id, project_id, seq, route, operation, mode, status, status_code, provider, model, workflow_intent_id, key_id,
                          input_tokens, output_tokens, cost_usd_micros, created_at, completed_at, duration_ms, envelope)
       VALUES ('exec_req_intentcol', 'prj_intent_col', 64, 'executions', 'chat', 'sync', 'completed', 200, 'openai', 'gpt-x', 'run-42', 'key_1',
               10, 5, 42, '2026-11-27T10:00:00.123Z', '2026-11-27T10:00:00.456Z', 333, '{"a":1}')`,
    );

    expect(await migrate(own.url)).toEqual(['0360_calls_intent_id']);
    expect((await db.query('SELECT intent_id FROM calls WHERE id = $1', ['exec_req_intentcol'])).rows).toEqual([{ intent_id: 'run-42' }]);
    const after = await intentIndexes(db);
    expect(after[0]).toBe('calls_project_intent_idx');
    expect(after.length).toBe(before.length);
    const { rows: partitions } = await db.query<{ name: string }>(`SELECT inhrelid::regclass::text AS name FROM pg_inherits WHERE inhparent = 'calls'::regclass ORDER BY 1`);
    expect(after.slice(1)).toEqual(partitions.map((p) => `${p.name}_project_id_intent_id_created_at_idx`).sort());
    const leaf = recordLeafCanonical((await readRecordLeafSourcesOfSeqs(db, 'prj_intent_col', [64])).get('64')!, null);
    expect(leaf).toContain('"workflow_intent_id":"run-42"');
    expect(leaf).not.toContain('"intent_id"');

    expect(await migrate(own.url)).toEqual([]);

    expect(await migrateDownOne(own.url)).toEqual(['0360_calls_intent_id']);
    expect(await intentIndexes(db)).toEqual(before);
    expect((await db.query('SELECT workflow_intent_id FROM calls WHERE id = $1', ['exec_req_intentcol'])).rows).toEqual([{ workflow_intent_id: 'run-42' }]);
    expect(await migrate(own.url)).toEqual(['0360_calls_intent_id']);
    expect(await intentIndexes(db)).toEqual(after);
    expect(recordLeafCanonical((await readRecordLeafSourcesOfSeqs(db, 'prj_intent_col', [64])).get('64')!, null)).toBe(leaf);

    // A week attached after the rename names its copy from the column's new name, not the index's memory of the old one.
    const { created } = await ensureWeekPartitions(db, new Date('2099-03-02T00:00:00Z'), 0);
    expect(created).toContain('calls_w20990302');
    expect(await intentIndexes(db)).toEqual([after[0], ...[...after.slice(1), 'calls_w20990302_project_id_intent_id_created_at_idx'].sort()]);
  });
});
