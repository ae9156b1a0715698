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
 * Creates on the new, empty week `partition` a copy of each of `table`'s indexes that backs no
 * constraint, unnamed, so PostgreSQL names it from the columns' current names; ATTACH then takes
 * each as the index's copy (an empty table's index is built at once). Left to ATTACH, a copy would be named from the names the columns had
 * when the index was made (a renamed column keeps its old name in the index).
 */
async function createIndexCopies(c: Queryable, table: string, partition: string): Promise<void> {
  const { rows } = await c.query<{ def: string }>(
    `SELECT pg_get_indexdef(x.indexrelid) AS def FROM pg_index x
      WHERE x.indrelid = $1::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid)
      ORDER BY x.indexrelid`,
    [table],
  );
  // In the order ATTACH takes them (oid), so two copies whose names collide are numbered as ATTACH numbers them.
  for (const { def } of rows) {
    // A definition of another form is left to ATTACH, which then creates that copy itself.
    const m = /^CREATE (UNIQUE )?INDEX \S+ ON ONLY \S+ (USING .*)$/s.exec(def);
    if (m) await c.query(`CREATE ${m[1] ?? ''}INDEX ON ${partition} ${m[2]}`);
  }
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
        await createIndexCopies(c, table, name);
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

/** A week partition retention could not drop this round, and why (the first reason found). */
export interface KeptPartition {
  partition: string;
  reason: string;
}

/** What a round of drops did: the partitions dropped and kept, how long it held the parent tables locked and how many tries at the locks it made. */
export interface WeeksDropped {
  dropped: string[];
  kept: KeptPartition[];
  lockedMs: number;
  tries: number;
}

/**
 * Drops the week partitions that end at or before `cutoff` and hold only archived rows: every
 * record and permit of the week is in one of its project's verified archives (the rows of a
 * week are not deleted one by one first: src/retention/delete.ts defers them to this drop), and
 * nothing retained still needs one of its permits (src/db/repositories/archived-weeks.ts). An
 * empty week qualifies at once. Retention passes the earliest cutoff of all projects (none when a
 * project keeps everything), after its archives have verified. Returns the partitions dropped and
 * those kept with their reason.
 *
 * A week is checked first without any table lock, and the rows naming its permits by foreign key
 * (usage reports, evidence, attestations) deleted; then, in one short transaction, the parent
 * tables' exclusive locks are taken, the week checked again and its partitions detached and
 * dropped. The request path's statements lock every partition through the parent, parent first
 * (generic plans, docs/decisions/time-partitions.md): a lock held on the week's partition while
 * waiting for the parent's would wait on a call that waits on it. With the parents held, nothing
 * writes to the week, so the second check is what the drop relies on; it reads index ranges
 * only, and the calls queued behind the locks wait that long. A lock not had within the try's wait
 * (`lockWaitMs`) is let go (the calls queued behind it go on) and tried again after a pause, LOCK_TRIES times, then
 * left to the next round. A week another week's permits descend from is tried again after the
 * later weeks.
 */
export async function dropArchivedWeeks(db: Db, cutoff: Date): Promise<WeeksDropped> {
  const locks = { lockedMs: 0, tries: 0 };
  const dropped: string[] = [];
  let kept: KeptPartition[] = [];
  const bytewise = await permitIdsSortBytewise(db);
  const weeks = new Map<number, WeekParts>();
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
    kept = [];
    for (const [at, parts] of pending) {
      const r = await dropWeek(db, { week: new Date(at), parts, bytewise, locks });
      dropped.push(...r.gone);
      kept.push(...r.kept);
      const rest = { calls: parts.calls && !r.gone.includes(parts.calls) ? parts.calls : undefined, permits: parts.permits && !r.gone.includes(parts.permits) ? parts.permits : undefined };
      if (rest.calls || rest.permits) left.push([at, rest]);
    }
    if (dropped.length === before) break;
    pending = left;
  }
  return { dropped, kept, ...locks };
}

interface WeekParts {
  calls?: string;
  permits?: string;
}

const LOCK_WAIT_FIRST_MS = 25;
const LOCK_WAIT_MAX_MS = 100;
/**
 * How long a try waits for the exclusive locks: every call that asks for one of those tables
 * after the try's lock request queues behind it for as long, so the first tries wait little
 * (a call's added wait stays within its usual spread) and only a try after those failed waits
 * longer, for the transactions of a busier server to end.
 */
export function lockWaitMs(tryIndex: number): number {
  return Math.min(LOCK_WAIT_MAX_MS, LOCK_WAIT_FIRST_MS * 2 ** Math.floor(tryIndex / 2));
}
/** How many times it tries before the week is left to the next round. */
const LOCK_TRIES = 40;
/** The pause between two tries: long enough for the calls queued behind a try to go through. */
const LOCK_PAUSE_MS = 250;

/** The week's id ranges: its records' and its permits'. */
function weekIds(week: Date): { records: { from: string; to: string }; permits: { from: string; to: string } } {
  const next = new Date(week.getTime() + WEEK_MS);
  return { records: { from: idBound('exec_req_', week), to: idBound('exec_req_', next) }, permits: { from: idBound('permit_', week), to: idBound('permit_', next) } };
}

/**
 * Which of the week's partitions hold only archived rows (to drop) and why the others stay. Where
 * the database's collation does not order permit ids as their bytes (`bytewise` false) the rows
 * naming a week's permits cannot be read by range, and a permits week goes only once empty.
 */
async function checkWeek(c: Queryable, week: Date, parts: WeekParts, bytewise: boolean): Promise<{ drop: { table: string; name: string }[]; kept: KeptPartition[] }> {
  const ids = weekIds(week);
  const drop: { table: string; name: string }[] = [];
  const kept: KeptPartition[] = [];
  if (parts.calls) {
    const why = await recordsNotArchived(c, parts.calls);
    if (why === null) drop.push({ table: 'calls', name: parts.calls });
    else kept.push({ partition: parts.calls, reason: why });
  }
  if (parts.permits) {
    const recordsGo = !parts.calls || drop.length > 0;
    const why = !recordsGo
      ? "its week's call records stay"
      : bytewise
        ? await permitsNotArchived(c, parts.permits, ids.permits, ids.records)
        : (await c.query(`SELECT 1 FROM ${parts.permits} LIMIT 1`)).rows.length > 0
          ? 'a permit (permit ids do not sort as bytes in this collation)'
          : null;
    if (why === null) drop.push({ table: 'permits', name: parts.permits });
    else kept.push({ partition: parts.permits, reason: why });
  }
  return { drop, kept };
}

/**
 * The tables a week's detach and drop lock, in the order the request path takes them: the tables
 * the parents' foreign keys name (the drop of a detached week removes its constraints' triggers
 * there: projects, which the pipeline's functions read before they write a permit), the tables
 * whose foreign keys name the parents (the detach drops their constraints' clones pointing at the
 * week: permits' usage reports, evidence and attestations, written before their permit is
 * checked), then the parent tables of the week's partitions. All in ACCESS EXCLUSIVE mode, the
 * strongest any of these steps takes: nothing is waited for once the parents are held, and
 * retention holds no parent while it waits for another table.
 */
async function tablesLockedByDrop(db: Queryable, parents: string[]): Promise<string[]> {
  const { rows } = await db.query<{ t: string; named: boolean }>(
    `SELECT c.confrelid::regclass::text AS t, true AS named FROM pg_constraint c
      WHERE c.contype = 'f' AND c.conparentid = 0 AND c.conrelid = ANY($1::regclass[]) AND NOT c.confrelid = ANY($1::regclass[])
     UNION
     SELECT c.conrelid::regclass::text, false FROM pg_constraint c
      WHERE c.contype = 'f' AND c.conparentid = 0 AND c.confrelid = ANY($1::regclass[]) AND NOT c.conrelid = ANY($1::regclass[])`,
    [parents],
  );
  const named = [...new Set(rows.filter((r) => r.named).map((r) => r.t))].sort();
  const naming = [...new Set(rows.filter((r) => !r.named && !named.includes(r.t)).map((r) => r.t))].sort();
  return [...named, ...naming, ...[...parents].sort()];
}

/** Checks and drops one week's partitions; returns those dropped and those kept with their reason. */
async function dropWeek(
  db: Db,
  o: { week: Date; parts: WeekParts; bytewise: boolean; locks: { lockedMs: number; tries: number } },
): Promise<{ gone: string[]; kept: KeptPartition[] }> {
  const { week, parts, bytewise, locks } = o;
  const first = await checkWeek(db, week, parts, bytewise);
  if (first.drop.length === 0) return { gone: [], kept: first.kept };
  // The week's permits are archived and nothing retained names them: the rows that name them by
  // foreign key go now, outside the locks (the detach's own check of those keys then finds none).
  if (first.drop.some((d) => d.table === 'permits')) await deletePermitDependents(db, weekIds(week).permits);
  const lockSet = await tablesLockedByDrop(db, [...new Set(first.drop.map((d) => d.table))]);
  for (let i = 0; i < LOCK_TRIES; i++) {
    locks.tries += 1;
    let held = 0;
    try {
      return await withTransaction(db, async (c) => {
        // Every lock the detach and the drop take, in one statement and the try's wait in all (a
        // lock timeout counts each lock's wait): a lock waited for after the parents' would hold
        // the calls queued behind them that long again, and give up as often. A wait the set did
        // not foresee (a lock a later statement takes) gives up as soon.
        const wait = lockWaitMs(i);
        await c.query(`SET LOCAL lock_timeout = '${wait}ms'`);
        await c.query(`SET LOCAL statement_timeout = '${wait}ms'`);
        await c.query(`LOCK TABLE ${lockSet.join(', ')} IN ACCESS EXCLUSIVE MODE`);
        held = performance.now();
        await c.query(`SET LOCAL statement_timeout = 0`);
        const again = await checkWeek(c, week, parts, bytewise);
        const gone: string[] = [];
        // Permits first, as they are named (either order is safe: each was checked on its own).
        for (const d of [...again.drop].reverse()) {
          await c.query(`ALTER TABLE ${d.table} DETACH PARTITION ${d.name}`);
          await c.query(`DROP TABLE ${d.name}`);
          gone.push(d.name);
        }
        return { gone, kept: [...first.kept, ...again.kept] };
      });
    } catch (err) {
      const code = (err as { code?: string }).code;
      // A row naming a permit of the week written since the check (its foreign key refuses the detach): the next round.
      if (code === '23503') return { gone: [], kept: [...first.kept, ...first.drop.map((d) => ({ partition: d.name, reason: 'a row written since the check names one of its permits' }))] };
      // The locks not had in time, or chosen to break a deadlock: let go, and after a pause try again.
      if (code !== '55P03' && code !== '40P01' && !(code === '57014' && held === 0)) throw err;
    } finally {
      // Held until the commit or the rollback let the locks go.
      if (held > 0) locks.lockedMs += performance.now() - held;
    }
    await new Promise((r) => setTimeout(r, LOCK_PAUSE_MS * (0.5 + Math.random())));
  }
  return { gone: [], kept: [...first.kept, ...first.drop.map((d) => ({ partition: d.name, reason: `its table's lock was not had in ${LOCK_TRIES} tries` }))] };
}
