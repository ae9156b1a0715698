/**
 * The week partitions retention drops, and the weeks whose rows it leaves to that drop
 * (src/db/partitions.ts, docs/decisions/time-partitions.md). A week goes once it ends before
 * every project's retention cutoff, that is before the longest retention, and every row it holds
 * is archived; a project that keeps everything keeps every week (its rows may lie in any of them).
 */
import type { Db, Queryable } from '../db/pool';
import { dropArchivedWeeks, weekStart, type WeeksDropped } from '../db/partitions';
import { permitIdsSortBytewise } from '../db/repositories/archived-weeks';
import type { Deferral } from './delete';

const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;

/** The longest retention of all projects in days, or null when a project keeps everything. */
async function longestRetention(db: Queryable, globalDays: number | undefined): Promise<number | null> {
  const { rows } = await db.query<{ all_retained: boolean | null; longest: number | null }>(
    `SELECT bool_and(coalesce(retention_days, $1::int) IS NOT NULL) AS all_retained,
            max(coalesce(retention_days, $1::int)) AS longest
       FROM projects`,
    [globalDays ?? null],
  );
  const { all_retained, longest } = rows[0];
  return all_retained && longest !== null ? longest : null;
}

export async function dropAgedPartitions(db: Db, globalDays: number | undefined, now: Date): Promise<WeeksDropped> {
  const longest = await longestRetention(db, globalDays);
  if (longest === null) return { dropped: [], kept: [], lockedMs: 0, tries: 0 };
  return dropArchivedWeeks(db, new Date(now.getTime() - longest * DAY_MS));
}

/**
 * The weeks whose records and permits retention does not delete one by one (src/retention/delete.ts):
 * those that end at most a week after the longest retention's cutoff, so that every project's
 * retention will have passed them within a week, when they are dropped whole. A row archived
 * there stays readable until then (at most a week past its retention). None when a project keeps
 * everything (no week is ever dropped), and none for an operator's run for one project (closing an
 * account deletes its rows at once).
 */
export async function deferredWeeks(db: Queryable, globalDays: number | undefined, now: Date, projectId: string | undefined): Promise<Deferral | null> {
  if (projectId !== undefined) return null;
  const longest = await longestRetention(db, globalDays);
  if (longest === null) return null;
  // Weeks that begin before this Monday end by the longest cutoff + 7 days.
  const before = weekStart(new Date(now.getTime() - longest * DAY_MS + WEEK_MS));
  // A permits week is dropped with its rows only where their ids sort as bytes (src/db/partitions.ts).
  return { before, permits: await permitIdsSortBytewise(db) };
}
