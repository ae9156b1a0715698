/**
 * Week partitions of the call record and the permit (src/db/partitions.ts,
 * src/retention/partitions.ts): created ahead by the maintenance, a lookup by id touching one
 * partition, and retention dropping a week only when every project's retention has passed it and
 * it holds no row. On a database of the file's own: the drop depends on every project's retention.
 */
import { newId } from '../../../src/ids';
import { ensureWeekPartitions, idBound, partitionName, weekPartitions, weekStart } from '../../../src/db/partitions';
import { dropAgedPartitions } from '../../../src/retention/partitions';
import { ownDatabasePool } from '../../support/own-database';

const WEEK = 7 * 86_400_000;
const own = ownDatabasePool('partitions');

const names = async (table: string) => (await weekPartitions(own.db, table)).map((p) => p.name);

async function insertProject(retentionDays: number | null): Promise<string> {
  const id = newId('proj');
  await own.db.query(`INSERT INTO projects (id, name, retention_days) VALUES ($1, $1, $2)`, [id, retentionDays]);
  return id;
}

/** A record and its permit whose ids were minted at `at`. */
async function insertCall(projectId: string, at: Date): Promise<{ permitId: string; recordId: string }> {
  const hex = (prefix: string) => idBound(prefix, at) + '7000800000000000' + Math.floor(Math.random() * 0xffff).toString(16).padStart(4, '0');
  const permitId = hex('permit_');
  const recordId = hex('exec_req_');
  await own.db.query(
    `INSERT INTO permits (id, project_id, route, decision, reason_code, display_reason, decision_details, issued_at)
     VALUES ($1, $2, 'executions', 'allow', 'allowed', 'Allowed', '{}', $3)`,
    [permitId, projectId, at],
  );
  await own.db.query(
    `INSERT INTO calls (id, project_id, route, operation, mode, status, status_code, permit_id, created_at, completed_at, duration_ms, envelope)
     VALUES ($1, $2, 'executions', 'chat', 'sync', 'completed', 200, $3, $4, $4, 1, '{}')`,
    [recordId, projectId, permitId, at],
  );
  return { permitId, recordId };
}

async function partitionOf(table: string, id: string): Promise<string> {
  const { rows } = await own.db.query<{ p: string }>(`SELECT tableoid::regclass::text AS p FROM ${table} WHERE id = $1`, [id]);
  return rows[0].p;
}

describe('week partitions of permits and call records', () => {
  it('a migrated database has this week and the four after it; the maintenance adds the weeks to come, once', async () => {
    const now = new Date();
    for (const table of ['permits', 'calls']) {
      const have = await names(table);
      for (let i = 0; i <= 4; i++) expect(have).toContain(partitionName(table, new Date(weekStart(now).getTime() + i * WEEK)));
    }
    const later = new Date(now.getTime() + 6 * WEEK);
    const first = await ensureWeekPartitions(own.db, later);
    expect(first.created).toEqual(
      expect.arrayContaining(['permits', 'calls'].map((t) => partitionName(t, new Date(weekStart(later).getTime() + 4 * WEEK)))),
    );
    expect(first.skipped).toEqual([]);
    expect(await ensureWeekPartitions(own.db, later)).toEqual({ created: [], skipped: [] });
  });

  it("a call's rows go to their week; a lookup by id reads that partition only", async () => {
    const project = await insertProject(null);
    const now = new Date();
    const { permitId, recordId } = await insertCall(project, now);
    expect(await partitionOf('permits', permitId)).toBe(partitionName('permits', weekStart(now)));
    expect(await partitionOf('calls', recordId)).toBe(partitionName('calls', weekStart(now)));
    const { rows } = await own.db.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT * FROM calls WHERE id = '${recordId}'`);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).toContain(partitionName('calls', weekStart(now)));
    expect(plan).not.toContain('calls_default');
    expect(plan).not.toContain(partitionName('calls', new Date(weekStart(now).getTime() + WEEK)));
  });

  it('a week whose ids already sit in the DEFAULT partition is not created, and is reported', async () => {
    const project = await insertProject(null);
    const far = new Date(Date.now() + 20 * WEEK);
    const { recordId } = await insertCall(project, far);
    expect(await partitionOf('calls', recordId)).toBe('calls_default');
    const r = await ensureWeekPartitions(own.db, far, 0);
    expect(r.skipped).toEqual(expect.arrayContaining([partitionName('calls', weekStart(far)), partitionName('permits', weekStart(far))]));
    expect(await names('calls')).not.toContain(partitionName('calls', weekStart(far)));
    await own.db.query('DELETE FROM calls WHERE id = $1', [recordId]);
    await own.db.query('DELETE FROM permits WHERE project_id = $1', [project]);
  });

  it('retention drops an empty week once every project has a retention that passed it, and keeps a week with rows', async () => {
    const now = new Date();
    const old = new Date(now.getTime() - 6 * WEEK);
    await ensureWeekPartitions(own.db, old, 2); // weeks −6, −5, −4
    const keeper = await insertProject(14);
    const { recordId } = await insertCall(keeper, new Date(old.getTime() + WEEK));
    const oldWeek = (t: string, i: number) => partitionName(t, new Date(weekStart(old).getTime() + i * WEEK));

    // A project that keeps everything keeps every week.
    const forever = await insertProject(null);
    await own.db.query(`UPDATE projects SET retention_days = 14 WHERE id <> ALL($1::text[])`, [[forever]]);
    expect((await dropAgedPartitions(own.db, undefined, now)).dropped).toEqual([]);

    await own.db.query(`UPDATE projects SET retention_days = 14 WHERE id = $1`, [forever]);
    const { dropped, kept } = await dropAgedPartitions(own.db, undefined, now);
    expect(dropped).toEqual(expect.arrayContaining([oldWeek('permits', 0), oldWeek('calls', 0), oldWeek('permits', 2), oldWeek('calls', 2)]));
    // The week with a call stays; the current week (inside the retention) stays.
    expect(dropped).not.toContain(oldWeek('calls', 1));
    expect(dropped).not.toContain(oldWeek('permits', 1));
    expect(dropped).not.toContain(partitionName('calls', weekStart(now)));
    expect(await names('calls')).toContain(oldWeek('calls', 1));
    // The report says why: the record's project has no archive.
    expect(kept).toEqual(expect.arrayContaining([{ partition: oldWeek('calls', 1), reason: expect.stringContaining('which has no archive') }]));

    // Once its rows are gone (archived and deleted by retention), the week goes too.
    await own.db.query('DELETE FROM calls WHERE id = $1', [recordId]);
    await own.db.query('DELETE FROM permits WHERE project_id = $1', [keeper]);
    expect((await dropAgedPartitions(own.db, undefined, now)).dropped).toEqual(expect.arrayContaining([oldWeek('calls', 1), oldWeek('permits', 1)]));
    expect(await names('calls')).not.toContain(oldWeek('calls', 1));
  });

  it('a week whose record is archived by seq but still in the log stays, and goes once its chain row is gone', async () => {
    const now = new Date();
    const old = new Date(now.getTime() - 12 * WEEK);
    await ensureWeekPartitions(own.db, old, 0);
    await own.db.query('UPDATE projects SET retention_days = 14');
    const project = await insertProject(14);
    const at = new Date(weekStart(old).getTime() + 86_400_000);
    const { recordId } = await insertCall(project, at);
    await own.db.query('UPDATE calls SET seq = 900001 WHERE id = $1', [recordId]);
    await own.db.query(`INSERT INTO event_chain (seq, project_id, chain_pos, prev_hash, hash) VALUES (900001, $1, 1, 'p', 'h')`, [project]);
    // Its project's verified archive reaches past the record's seq and the week's end.
    await own.db.query(
      `INSERT INTO archives (id, project_id, status, window_since, window_until, first_index, last_index, last_seq, head_hash, compact_range, checkpoint_size, path)
       VALUES ($1, $2, 'completed', $3, $4, 0, 15, 900002, 'h', '[]', 16, 'x')`,
      [newId('arch'), project, at, now],
    );
    const week = (t: string) => partitionName(t, weekStart(old));
    const first = await dropAgedPartitions(own.db, undefined, now);
    expect(first.dropped).not.toContain(week('calls'));
    expect(first.kept).toEqual(expect.arrayContaining([{ partition: week('calls'), reason: `record ${recordId}, still in the log` }]));
    await own.db.query('DELETE FROM event_chain WHERE seq = 900001');
    expect((await dropAgedPartitions(own.db, undefined, now)).dropped).toEqual(expect.arrayContaining([week('calls'), week('permits')]));
  });

  it('the global retention counts for projects without their own', async () => {
    const now = new Date();
    const old = new Date(now.getTime() - 10 * WEEK);
    await ensureWeekPartitions(own.db, old, 0);
    await own.db.query('UPDATE projects SET retention_days = NULL');
    expect((await dropAgedPartitions(own.db, undefined, now)).dropped).toEqual([]);
    expect((await dropAgedPartitions(own.db, 30, now)).dropped).toEqual([partitionName('permits', weekStart(old)), partitionName('calls', weekStart(old))]);
  });
});
