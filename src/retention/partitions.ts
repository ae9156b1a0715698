/**
 * The week partitions retention drops: those that end before every project's retention cutoff
 * and whose rows retention has archived and deleted (src/db/partitions.ts). A project that keeps
 * everything keeps every week: its rows may lie in any of them.
 */
import type { Db } from '../db/pool';
import { dropEmptyWeekPartitions } from '../db/partitions';

export async function dropAgedPartitions(db: Db, globalDays: number | undefined, now: Date): Promise<string[]> {
  const { rows } = await db.query<{ all_retained: boolean | null; longest: number | null }>(
    `SELECT bool_and(coalesce(retention_days, $1::int) IS NOT NULL) AS all_retained,
            max(coalesce(retention_days, $1::int)) AS longest
       FROM projects`,
    [globalDays ?? null],
  );
  const { all_retained, longest } = rows[0];
  if (!all_retained || longest === null) return [];
  return dropEmptyWeekPartitions(db, new Date(now.getTime() - longest * 86_400_000));
}
