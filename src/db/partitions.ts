/**
 * Week partitions of the tables every governed call writes (docs/decisions/time-partitions.md).
 * The tables are range-partitioned on their id: a UUIDv7 behind a kind prefix, whose first 12 hex
 * digits are its creation instant in milliseconds, so the ids of a week form one range and a
 * lookup by id prunes to one partition.
 *
 * The maintenance creates the coming weeks' partitions ahead of time (never the request path), and
 * retention drops a week's partition once every project's retention has passed the week and its
 * rows are gone (archived, then deleted), which returns the space to the operating system where a
 * deletion alone would leave it to be reused.
 */
import { withTransaction, type Db, type Queryable } from './pool';

export interface PartitionedTable {
  table: string;
  /** The kind prefix of the table's ids, with its underscore (`newId('permit')` → `permit_…`). */
  idPrefix: string;
}

export const PARTITIONED_TABLES: readonly PartitionedTable[] = [
  { table: 'permits', idPrefix: 'permit_' },
  { table: 'executions', idPrefix: 'exec_req_' },
];

const WEEK_MS = 7 * 24 * 3600 * 1000;

/** Monday 00:00 UTC of the week holding `instant`. */
export function weekStart(instant: Date): Date {
  const day = new Date(Date.UTC(instant.getUTCFullYear(), instant.getUTCMonth(), instant.getUTCDate()));
  const sinceMonday = (day.getUTCDay() + 6) % 7;
  return new Date(day.getTime() - sinceMonday * 24 * 3600 * 1000);
}

/** The smallest id of `prefix` created at `instant` (a UUIDv7's 48-bit millisecond timestamp). */
export function idBound(prefix: string, instant: Date): string {
  return prefix + instant.getTime().toString(16).padStart(12, '0');
}

/** `permits_w20261123`: the table and the week's Monday. */
export function partitionName(table: string, week: Date): string {
  return `${table}_w${week.toISOString().slice(0, 10).replaceAll('-', '')}`;
}

export interface WeekPartition {
  name: string;
  week: Date;
}

/** The table's week partitions, oldest first (the DEFAULT partition is not one). */
export async function weekPartitions(db: Queryable, table: string): Promise<WeekPartition[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass AND c.relname ~ '_w[0-9]{8}$'`,
    [table],
  );
  return rows
    .map((r) => {
      const d = r.name.slice(-8);
      return { name: r.name, week: new Date(`${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}T00:00:00Z`) };
    })
    .sort((a, b) => a.week.getTime() - b.week.getTime());
}

/**
 * Creates the partitions of the current week and the `weeksAhead` weeks after it where missing.
 * A week whose ids already sit in the DEFAULT partition (the maintenance did not run in time) is
 * left out and reported: its rows stay in the DEFAULT partition, where retention deletes them one
 * by one.
 */
export async function ensureWeekPartitions(
  db: Db,
  now: Date,
  weeksAhead = 4,
): Promise<{ created: string[]; skipped: string[] }> {
  const created: string[] = [];
  const skipped: string[] = [];
  const first = weekStart(now);
  for (const { table, idPrefix } of PARTITIONED_TABLES) {
    const existing = new Set((await weekPartitions(db, table)).map((p) => p.name));
    for (let i = 0; i <= weeksAhead; i++) {
      const week = new Date(first.getTime() + i * WEEK_MS);
      const name = partitionName(table, week);
      if (existing.has(name)) continue;
      const from = idBound(idPrefix, week);
      const to = idBound(idPrefix, new Date(week.getTime() + WEEK_MS));
      const { rows } = await db.query(`SELECT 1 FROM ${table}_default WHERE id >= $1 AND id < $2 LIMIT 1`, [from, to]);
      if (rows.length > 0) {
        skipped.push(name);
        continue;
      }
      // Attaching takes a brief exclusive lock on the DEFAULT partition (checked empty for the
      // range) and a lighter one on the table; a lock wait gives up rather than stall the calls
      // queued behind it, and the next round tries again.
      const attached = await withTransaction(db, async (c) => {
        await c.query(`SET LOCAL lock_timeout = '2s'`);
        await c.query(`CREATE TABLE ${name} (LIKE ${table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
        await c.query(`ALTER TABLE ${table} ATTACH PARTITION ${name} FOR VALUES FROM ('${from}') TO ('${to}')`);
        return true;
      }).catch((err: { code?: string }) => {
        // Busy (lock wait given up, or chosen to break a deadlock), or created meanwhile by another
        // worker's round: the next round sees it either way.
        if (err.code === '55P03' || err.code === '40P01' || err.code === '42P07') return false;
        throw err;
      });
      if (attached) created.push(name);
      else skipped.push(name);
    }
  }
  return { created, skipped };
}

/**
 * Drops the week partitions that end at or before `cutoff` and hold no row any more. Retention
 * passes the earliest cutoff of all projects (none when a project keeps everything), after its
 * archives have verified and their rows are deleted.
 */
export async function dropEmptyWeekPartitions(db: Db, cutoff: Date): Promise<string[]> {
  const dropped: string[] = [];
  for (const { table } of PARTITIONED_TABLES) {
    for (const p of await weekPartitions(db, table)) {
      if (p.week.getTime() + WEEK_MS > cutoff.getTime()) break;
      const { rows } = await db.query(`SELECT 1 FROM ${p.name} LIMIT 1`);
      if (rows.length > 0) continue;
      const gone = await withTransaction(db, async (c) => {
        await c.query(`SET LOCAL lock_timeout = '2s'`);
        await c.query(`LOCK TABLE ${p.name} IN ACCESS EXCLUSIVE MODE`);
        // Checked again under the lock: a row written since the first look keeps the week.
        if ((await c.query(`SELECT 1 FROM ${p.name} LIMIT 1`)).rows.length > 0) return false;
        await c.query(`ALTER TABLE ${table} DETACH PARTITION ${p.name}`);
        await c.query(`DROP TABLE ${p.name}`);
        return true;
      }).catch((err: { code?: string }) => {
        // Busy (lock wait given up, or chosen to break a deadlock): the next round drops it.
        if (err.code === '55P03' || err.code === '40P01') return false;
        throw err;
      });
      if (gone) dropped.push(p.name);
    }
  }
  return dropped;
}
