/**
 * The governance rollup (migration 0310, docs/decisions/governance-rollup.md): permits counted per
 * minute and per hour of their `issued_at`, by (decision, reason code) and by firewall (action,
 * category), so the Governance page reads a few rows per period instead of every permit in a window.
 *
 * Folded with the call rollup (`foldCalls`, src/db/repositories/call-rollup.ts): the permit of each
 * call record the chain sequencer chains, when it is a governed call's own permit
 * (`FOLDED_PERMIT_SQL`). Every other permit (action permits, sessions, MCP tools, attested
 * children) never has a record of its own, and is read from the permits through
 * `permits_unfolded_issued_idx`, whose predicate is `UNFOLDED_PERMIT_SQL`.
 */
import type { Queryable } from '../pool';

/** A permit the fold counts (alias `p`): a governed call's own, which exactly one record carries. */
export const FOLDED_PERMIT_SQL = "((p.route IN ('executions', 'execute') OR p.route LIKE 'proxy:%') AND p.parent_permit_id IS NULL)";

/** The complement, as permits_unfolded_issued_idx's predicate spells it (so the planner can use it). */
export const UNFOLDED_PERMIT_SQL = "((p.route NOT IN ('executions', 'execute') AND p.route NOT LIKE 'proxy:%') OR p.parent_permit_id IS NOT NULL)";

/** When the governance rollup starts for a project: its permits issued earlier are not folded (null: all are). */
export async function governanceRollupStart(db: Queryable, projectId: string): Promise<Date | null> {
  const { rows } = await db.query<{ started_at: Date }>('SELECT started_at FROM governance_rollup_starts WHERE project_id = $1', [projectId]);
  return rows[0]?.started_at ?? null;
}

/**
 * Retention deleted the project's permits before `cutoff`: reads take the time before it from the
 * permits that remain, so the start moves there (never back) and the rows of periods ending by it
 * can go (`deleteGovernanceRollupBefore`).
 */
export async function moveGovernanceRollupStart(db: Queryable, projectId: string, cutoff: Date): Promise<void> {
  await db.query(
    `INSERT INTO governance_rollup_starts (project_id, started_at) VALUES ($1, $2)
     ON CONFLICT (project_id) DO UPDATE SET started_at = greatest(governance_rollup_starts.started_at, excluded.started_at)`,
    [projectId, cutoff],
  );
}

/** Deletes up to `limit` governance rollup rows of the project's periods that end by `cutoff`; returns how many. */
export async function deleteGovernanceRollupBefore(db: Queryable, projectId: string, cutoff: Date, limit: number): Promise<{ rowCount: number | null }> {
  return db.query(
    `DELETE FROM governance_rollup WHERE ctid = ANY(ARRAY(
       SELECT ctid FROM governance_rollup WHERE project_id = $1 AND start + make_interval(secs => width) <= $2 LIMIT $3))`,
    [projectId, cutoff, limit],
  );
}
