/**
 * Week partitions of the tables every governed call writes (docs/decisions/time-partitions.md).
 * The tables are range-partitioned on their id: a UUIDv7 behind a kind prefix, whose first 12 hex
 * digits are its creation instant in milliseconds, so the ids of a week form one range and a
 * lookup by id prunes to one partition.
 *
 * The maintenance creates the coming weeks' partitions ahead of time (never the request path), and
 * retention drops a week's partition once every project's retention has passed the week and its
 * rows are archived, which returns the space to the operating system where a deletion would leave
 * it to be reused.
 */
import { withTransaction, type Db, type Queryable } from './pool';
import { deletePermitDependents, permitIdsSortBytewise, permitsNotArchived, recordsNotArchived } from './repositories/archived-weeks';

export interface PartitionedTable {
  table: string;
  /** The kind prefix of the table's ids, with its underscore (`newId('permit')` → `permit_…`). */
  idPrefix: string;
}

export const PARTITIONED_TABLES: readonly PartitionedTable[] = [
  { table: 'permits', idPrefix: 'permit_' },
  { table: 'calls', idPrefix: 'exec_req_' },
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
 * Drops the week partitions that end at or before `cutoff` and hold only archived rows: every
 * record and permit of the week is in one of its project's verified archives (the rows of a
 * week are not deleted one by one first: src/retention/delete.ts defers them to this drop), and
 * nothing retained still needs one of its permits (src/db/repositories/archived-weeks.ts). An
 * empty week qualifies at once. Retention passes the earliest cutoff of all projects (none when a
 * project keeps everything), after its archives have verified.
 *
 * A week's records and permits are checked and dropped in one transaction that holds the week's
 * partitions in SHARE mode (no row of theirs is written meanwhile; reads go on), the permits
 * first deleting the usage reports, evidence and attestations that name them; a permits week still
 * needed stays while its records week goes. Detaching takes each table's exclusive lock for a
 * moment: a wait for it gives up after LOCK_WAIT (the calls queued behind it would wait as long)
 * and is tried again a few times, then left to the next round. A week another week's permits
 * descend from is tried again after the later weeks.
 */
export async function dropArchivedWeeks(db: Db, cutoff: Date): Promise<string[]> {
  const dropped: string[] = [];
  const bytewise = await permitIdsSortBytewise(db);
  const weeks = new Map<number, { calls?: string; permits?: string }>();
  for (const table of ['calls', 'permits'] as const) {
    for (const p of await weekPartitions(db, table)) {
      if (p.week.getTime() + WEEK_MS > cutoff.getTime()) continue;
      weeks.set(p.week.getTime(), { ...weeks.get(p.week.getTime()), [table]: p.name });
    }
  }
  // Newest first: a permit descends from an older one, so a later week's drop can free an
  // earlier one, which a second pass then takes.
  let pending = [...weeks.entries()].sort((a, b) => b[0] - a[0]);
  for (let pass = 0; pass < 2 && pending.length > 0; pass++) {
    const left: typeof pending = [];
    const before = dropped.length;
    for (const [at, parts] of pending) {
      const gone = await dropWeek(db, new Date(at), parts, bytewise);
      dropped.push(...gone);
      const rest = { calls: parts.calls && !gone.includes(parts.calls) ? parts.calls : undefined, permits: parts.permits && !gone.includes(parts.permits) ? parts.permits : undefined };
      if (rest.calls || rest.permits) left.push([at, rest]);
    }
    if (dropped.length === before) break;
    pending = left;
  }
  return dropped;
}

/** How long a drop waits for a table's exclusive lock, and how many times it tries. */
const LOCK_WAIT = '300ms';
const LOCK_TRIES = 5;

/**
 * Checks and drops one week's partitions; returns those dropped. Where the database's collation
 * does not order permit ids as their bytes (`bytewise` false) the rows naming a week's permits
 * cannot be read by range, and a permits week goes only once empty.
 */
async function dropWeek(db: Db, week: Date, parts: { calls?: string; permits?: string }, bytewise: boolean): Promise<string[]> {
  const next = new Date(week.getTime() + WEEK_MS);
  const records = { from: idBound('exec_req_', week), to: idBound('exec_req_', next) };
  const permitIds = { from: idBound('permit_', week), to: idBound('permit_', next) };
  return withTransaction(db, async (c) => {
    const named = [parts.calls, parts.permits].filter((n): n is string => n !== undefined);
    await c.query(`SET LOCAL lock_timeout = '2s'`);
    await c.query(`LOCK TABLE ${named.join(', ')} IN SHARE MODE`);
    const drop: { table: string; name: string }[] = [];
    if (parts.calls && (await recordsNotArchived(c, parts.calls)) === null) drop.push({ table: 'calls', name: parts.calls });
    const recordsGo = drop.length > 0 || !parts.calls;
    const permitsLeft = async (name: string) =>
      bytewise ? permitsNotArchived(c, name, permitIds, records) : (await c.query(`SELECT 1 FROM ${name} LIMIT 1`)).rows.length > 0 ? 'a permit' : null;
    if (parts.permits && recordsGo && (await permitsLeft(parts.permits)) === null) {
      await deletePermitDependents(c, permitIds);
      drop.push({ table: 'permits', name: parts.permits });
    }
    const gone: string[] = [];
    // Permits first, as they are named (either order is safe: each was checked on its own).
    for (const d of drop.reverse()) {
      if (await detach(c, d.table, d.name)) gone.push(d.name);
    }
    return gone;
  }).catch((err: { code?: string }) => {
    // Busy (the week's lock not had in time, or chosen to break a deadlock), or a row naming a
    // permit of the week written meanwhile (its foreign key refuses the detach): the next round.
    if (err.code === '55P03' || err.code === '40P01' || err.code === '23503') return [];
    throw err;
  });
}

/** Detaches and drops a partition inside the caller's transaction; false when the table's lock was not had in LOCK_TRIES waits. */
async function detach(c: Queryable, table: string, name: string): Promise<boolean> {
  await c.query(`SET LOCAL lock_timeout = '${LOCK_WAIT}'`);
  for (let i = 0; i < LOCK_TRIES; i++) {
    await c.query('SAVEPOINT detach');
    try {
      await c.query(`ALTER TABLE ${table} DETACH PARTITION ${name}`);
      await c.query(`DROP TABLE ${name}`);
      await c.query('RELEASE SAVEPOINT detach');
      return true;
    } catch (err) {
      await c.query('ROLLBACK TO SAVEPOINT detach');
      if ((err as { code?: string }).code !== '55P03') throw err;
      await new Promise((r) => setTimeout(r, 200 * (i + 1)));
    }
  }
  return false;
}
