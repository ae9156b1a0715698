/**
 * Retention drops a week partition while calls hold the locks the request path takes
 * (src/db/partitions.ts): the pipeline's PL/pgSQL statements run generic plans, which lock the
 * parent table and then every partition of it, the old weeks' included. Retention takes the
 * parents' exclusive locks before any lock on the week, lets a lock it did not get go again, and
 * so neither waits on a call that waits on it nor drops nothing; it waits for the other tables the
 * drop locks (projects, which the pipeline reads first) before it holds the parents. On a database of the file's own:
 * the drop depends on every project's retention.
 */
import type { PoolClient } from 'pg';
import { newId } from '../../../src/ids';
import { ensureWeekPartitions, partitionName, weekPartitions, weekStart } from '../../../src/db/partitions';
import { dropAgedPartitions } from '../../../src/retention/partitions';
import { ownDatabasePool } from '../../support/own-database';

const WEEK = 7 * 86_400_000;
const own = ownDatabasePool('partitions_load', 6);

/** A session writing as the request path's functions do: a generic plan, which locks every partition of both tables. */
async function callSession(): Promise<PoolClient> {
  const c = await own.db.connect();
  // A pooled connection may be one an earlier test prepared these on.
  await c.query('DEALLOCATE ALL');
  await c.query('SET plan_cache_mode = force_generic_plan');
  await c.query('PREPARE write_record(text) AS UPDATE calls SET status = status WHERE id = $1');
  await c.query('PREPARE write_permit(text) AS UPDATE permits SET decision = decision WHERE id = $1');
  return c;
}

async function oneCall(c: PoolClient): Promise<void> {
  await c.query('BEGIN');
  await c.query(`EXECUTE write_permit('permit_none')`);
  await c.query(`EXECUTE write_record('exec_req_none')`);
  await c.query('COMMIT');
}

/** Modes held (granted) by `pid` on `relation`. */
async function held(pid: number, relation: string): Promise<string[]> {
  const { rows } = await own.db.query<{ mode: string }>(`SELECT mode FROM pg_locks WHERE pid = $1 AND relation = $2::regclass AND granted`, [pid, relation]);
  return rows.map((r) => r.mode);
}

/** The backend of this database waiting for a lock on a retention statement (a LOCK TABLE, a detach, a drop), if any. */
async function retentionWaitingPid(): Promise<number | null> {
  const { rows } = await own.db.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
        AND (query LIKE 'LOCK TABLE %' OR query LIKE 'ALTER TABLE % DETACH %' OR query LIKE 'DROP TABLE %')`,
  );
  return rows[0]?.pid ?? null;
}

/** Backends of this database waiting for a lock on a LOCK TABLE statement (retention's try). */
async function retentionWaiting(): Promise<number> {
  const { rows } = await own.db.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'LOCK TABLE %'`,
  );
  return Number(rows[0].n);
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`never: ${what}`);
}

describe('retention drops a week partition under the request path’s locks', () => {
  it('drops the week while a call holds every partition’s lock, and calls go through meanwhile', async () => {
    const now = new Date();
    const old = new Date(now.getTime() - 6 * WEEK);
    await ensureWeekPartitions(own.db, old, 0);
    const week = (t: string) => partitionName(t, weekStart(old));
    await own.db.query(`INSERT INTO projects (id, name, retention_days) VALUES ($1, $1, 14)`, [newId('proj')]);

    // A call in flight: its transaction holds the parents and every partition, the old week's too.
    const holder = await callSession();
    const other = await callSession();
    try {
      await holder.query('BEGIN');
      await holder.query(`EXECUTE write_permit('permit_none')`);
      await holder.query(`EXECUTE write_record('exec_req_none')`);
      const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      expect(await held(holderPid, week('calls'))).toContain('RowExclusiveLock');
      expect(await held(holderPid, 'calls')).toContain('RowExclusiveLock');

      const drop = dropAgedPartitions(own.db, undefined, now);
      // Retention waits for the parents' locks…
      await until('retention waits for a lock', async () => (await retentionWaiting()) > 0);
      // …holding nothing a call waits on: another call, which locks every partition too, goes through
      // while the first call still holds its locks and retention has not had its own.
      await oneCall(other);
      await oneCall(other);
      expect((await weekPartitions(own.db, 'calls')).map((p) => p.name)).toContain(week('calls'));

      await holder.query('COMMIT');
      const { dropped, kept } = await drop;
      expect(dropped).toEqual(expect.arrayContaining([week('calls'), week('permits')]));
      expect(kept).toEqual([]);
      expect((await weekPartitions(own.db, 'calls')).map((p) => p.name)).not.toContain(week('calls'));
      expect((await weekPartitions(own.db, 'permits')).map((p) => p.name)).not.toContain(week('permits'));
      // Calls go on after the drop.
      await oneCall(other);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
      other.release();
    }
  });

  it('holds no parent while it waits for projects, which a call reads first, and drops the week after', async () => {
    const now = new Date();
    const old = new Date(now.getTime() - 6 * WEEK);
    await ensureWeekPartitions(own.db, old, 0);
    const week = (t: string) => partitionName(t, weekStart(old));
    await own.db.query(`UPDATE projects SET retention_days = 14`);
    await own.db.query(`INSERT INTO projects (id, name, retention_days) VALUES ($1, $1, 14)`, [newId('proj')]);

    // A call in flight that has read its project, as the pipeline's govern function does first.
    const holder = await own.db.connect();
    const other = await callSession();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT plan FROM projects LIMIT 1');

      const drop = dropAgedPartitions(own.db, undefined, now);
      let pid: number | null = null;
      await until('retention waits for a lock', async () => (pid = await retentionWaitingPid()) !== null);
      // Waiting, it holds neither parent: calls go through.
      expect(await held(pid!, 'calls')).not.toContain('AccessExclusiveLock');
      expect(await held(pid!, 'permits')).not.toContain('AccessExclusiveLock');
      await oneCall(other);

      await holder.query('COMMIT');
      const { dropped, kept } = await drop;
      expect(dropped).toEqual(expect.arrayContaining([week('calls'), week('permits')]));
      expect(kept).toEqual([]);
      await oneCall(other);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
      other.release();
    }
  });
});
