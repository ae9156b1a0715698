/**
 * What every rollup (call, governance, usage) keeps the same way: the table `<rollup>` of rows per
 * period (`start`, `width` in seconds) and `<rollup>_starts`, each project's instant before which
 * the rollup folds nothing (reads take that time from the source rows instead). Retention moves a
 * start forward, never back, and deletes the rows of the periods that end by it.
 */
import type { Queryable } from '../pool';

export type RollupTable = 'call_rollup' | 'governance_rollup' | 'usage_rollup';

export interface RollupBounds {
  /** When the rollup starts for a project (null: it folds all its rows). */
  start: (db: Queryable, projectId: string) => Promise<Date | null>;
  /** Moves the project's start to `cutoff`, unless it is already later. */
  moveStart: (db: Queryable, projectId: string, cutoff: Date) => Promise<void>;
  /** Deletes up to `limit` rows of the project's periods that end by `cutoff`; returns how many. */
  deleteBefore: (db: Queryable, projectId: string, cutoff: Date, limit: number) => Promise<{ rowCount: number | null }>;
}

export function rollupBounds(table: RollupTable): RollupBounds {
  const starts = `${table}_starts`;
  return {
    start: async (db, projectId) => {
      const { rows } = await db.query<{ started_at: Date }>(`SELECT started_at FROM ${starts} WHERE project_id = $1`, [projectId]);
      return rows[0]?.started_at ?? null;
    },
    moveStart: async (db, projectId, cutoff) => {
      await db.query(
        `INSERT INTO ${starts} (project_id, started_at) VALUES ($1, $2)
         ON CONFLICT (project_id) DO UPDATE SET started_at = greatest(${starts}.started_at, excluded.started_at)`,
        [projectId, cutoff],
      );
    },
    deleteBefore: (db, projectId, cutoff, limit) =>
      db.query(
        `DELETE FROM ${table} WHERE ctid = ANY(ARRAY(
           SELECT ctid FROM ${table} WHERE project_id = $1 AND start + make_interval(secs => width) <= $2 LIMIT $3))`,
        [projectId, cutoff, limit],
      ),
  };
}
