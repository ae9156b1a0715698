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
import { rollupBounds } from './rollup-bounds';

const bounds = rollupBounds('usage_rollup');

/** When the usage rollup starts for a project: its permits settled earlier are not folded (null: all are). */
export const usageRollupStart = bounds.start;

/**
 * Retention deleted the project's permits before `cutoff`: reads take the time before it from the
 * permits that remain, so the start moves there (never back) and the rows of periods ending by it
 * can go (`deleteUsageRollupBefore`).
 */
export const moveUsageRollupStart = bounds.moveStart;

/** Deletes up to `limit` usage rollup rows of the project's periods that end by `cutoff`; returns how many. */
export const deleteUsageRollupBefore = bounds.deleteBefore;
