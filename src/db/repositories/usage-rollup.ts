/**
 * The usage rollup (migration 0340, docs/decisions/usage-rollup.md): settled permits summed per
 * hour and per UTC day of their `settled_at`, by provider, model and API key, so the Spend page's
 * usage reads a few rows per day instead of every permit settled in a month.
 *
 * Folded with the call and governance rollups (`foldCalls`, src/db/repositories/call-rollup.ts):
 * the permit of each call record the chain sequencer chains, when it is a governed call's own
 * permit (`FOLDED_PERMIT_SQL`) and the record's statement settled it (`settled_at` equals the
 * record's `recorded_at`). src/db/repositories/settled-usage.ts reads every other settled permit
 * from the permits.
 */
import type { Queryable } from '../pool';

/** When the usage rollup starts for a project: its permits settled earlier are not folded (null: all are). */
export async function usageRollupStart(db: Queryable, projectId: string): Promise<Date | null> {
  const { rows } = await db.query<{ started_at: Date }>('SELECT started_at FROM usage_rollup_starts WHERE project_id = $1', [projectId]);
  return rows[0]?.started_at ?? null;
}

/**
 * Retention deleted the project's permits before `cutoff`: reads take the time before it from the
 * permits that remain, so the start moves there (never back) and the rows of periods ending by it
 * can go (`deleteUsageRollupBefore`).
 */
export async function moveUsageRollupStart(db: Queryable, projectId: string, cutoff: Date): Promise<void> {
  await db.query(
    `INSERT INTO usage_rollup_starts (project_id, started_at) VALUES ($1, $2)
     ON CONFLICT (project_id) DO UPDATE SET started_at = greatest(usage_rollup_starts.started_at, excluded.started_at)`,
    [projectId, cutoff],
  );
}

/** Deletes up to `limit` usage rollup rows of the project's periods that end by `cutoff`; returns how many. */
export async function deleteUsageRollupBefore(db: Queryable, projectId: string, cutoff: Date, limit: number): Promise<{ rowCount: number | null }> {
  return db.query(
    `DELETE FROM usage_rollup WHERE ctid = ANY(ARRAY(
       SELECT ctid FROM usage_rollup WHERE project_id = $1 AND start + make_interval(secs => width) <= $2 LIMIT $3))`,
    [projectId, cutoff, limit],
  );
}
