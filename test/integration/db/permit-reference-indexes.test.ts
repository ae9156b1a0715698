/**
 * Deleting a permit (retention) checks every foreign key that names it: without an index leading
 * with the referencing column, each check reads the whole referencing table, once per permit
 * deleted. Every foreign key to permits must have one (migrations 0240 and 0320), and the check's
 * own statement must be planned as an index scan.
 */
import { Pool } from 'pg';

describe('foreign keys that name a permit', () => {
  const db = new Pool({ connectionString: process.env.DATABASE_URL, max: 1 });
  afterAll(async () => {
    await db.end();
  });

  it('each has an index leading with its column, which the delete check uses', async () => {
    const { rows: keys } = await db.query<{ tbl: string; col: string; indexes: string[] }>(
      `SELECT c.conrelid::regclass::text AS tbl, a.attname AS col,
              ARRAY(SELECT i.indexrelid::regclass::text FROM pg_index i WHERE i.indrelid = c.conrelid AND i.indkey[0] = c.conkey[1]) AS indexes
         FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
        WHERE c.contype = 'f' AND c.confrelid = 'permits'::regclass AND c.conparentid = 0
        ORDER BY 1, 2`,
    );
    expect(keys.map((k) => `${k.tbl}.${k.col}`)).toEqual(
      expect.arrayContaining(['permit_attestations.child_permit_id', 'permit_attestations.permit_id', 'permit_evidence.permit_id', 'permit_usage_reports.permit_id', 'permits.parent_permit_id']),
    );
    expect(keys.filter((k) => k.indexes.length === 0).map((k) => `${k.tbl}.${k.col}`)).toEqual([]);

    // The statement PostgreSQL runs for each deleted permit, planned as if the table were large.
    const client = await db.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL enable_seqscan = off');
      for (const k of keys.filter((x) => x.tbl !== 'permits')) {
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT 1 FROM ONLY ${k.tbl} x WHERE $1::text OPERATOR(pg_catalog.=) ${k.col} FOR KEY SHARE OF x`, ['permit_x']);
        const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
        const used = k.indexes.find((name) => plan.includes(` ${name} `) || plan.endsWith(` ${name}`));
        expect({ key: `${k.tbl}.${k.col}`, used: used !== undefined }).toEqual({ key: `${k.tbl}.${k.col}`, used: true });
      }
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});
