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
import { rollupBounds } from './rollup-bounds';

/** A permit the fold counts (alias `p`): a governed call's own, which exactly one record carries. */
export const FOLDED_PERMIT_SQL = "((p.route IN ('executions', 'execute') OR p.route LIKE 'proxy:%') AND p.parent_permit_id IS NULL)";

/** The complement, as permits_unfolded_issued_idx's predicate spells it (so the planner can use it). */
export const UNFOLDED_PERMIT_SQL = "((p.route NOT IN ('executions', 'execute') AND p.route NOT LIKE 'proxy:%') OR p.parent_permit_id IS NOT NULL)";

const bounds = rollupBounds('governance_rollup');

/** When the governance rollup starts for a project: its permits issued earlier are not folded (null: all are). */
export const governanceRollupStart = bounds.start;

/**
 * Retention deleted the project's permits before `cutoff`: reads take the time before it from the
 * permits that remain, so the start moves there (never back) and the rows of periods ending by it
 * can go (`deleteGovernanceRollupBefore`).
 */
export const moveGovernanceRollupStart = bounds.moveStart;

/** Deletes up to `limit` governance rollup rows of the project's periods that end by `cutoff`; returns how many. */
export const deleteGovernanceRollupBefore = bounds.deleteBefore;
