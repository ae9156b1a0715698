/**
 * Hard caps: the reservation of a dispatched call is its worst case, the input's upper bound plus
 * the output-token ceiling × the output price (over every target it may reach). When a cap applies
 * and the request sets no ceiling, Tollgate sets one (the policy's budgets.default_max_output_tokens,
 * by default 1,024: the output the estimate always assumed); when the worst case does not fit what the caps leave, it lowers
 * the ceiling to the largest that fits, down to MIN_OUTPUT_CEILING. Below that the call is denied
 * by the cap checks as before (docs/decisions/hard-caps.md).
 */
import type { EvalContext } from './eval-context';
import type { PeriodKind } from './periods';
import type { GovernanceRequest } from './types';

/** The smallest output ceiling worth dispatching: below it the call is denied instead. */
export const MIN_OUTPUT_CEILING = 16;

export type CeilingBinding = 'per_request' | PeriodKind;

export interface OutputFit {
  /** The reservation: the worst-case cost with `outputTokens` as the ceiling. */
  costMicros: number;
  outputTokens: number;
  /** What Tollgate did to the ceiling; null when the caller's ceiling stands as sent. */
  ceiling: { requested: number | null; applied: number; binding: CeilingBinding | null } | null;
}

const CAP_FIELD: Record<PeriodKind, 'daily_usd_micros' | 'weekly_usd_micros' | 'monthly_usd_micros' | 'quarterly_usd_micros'> = {
  day: 'daily_usd_micros',
  week: 'weekly_usd_micros',
  month: 'monthly_usd_micros',
  quarter: 'quarterly_usd_micros',
};

export const BINDING_LABEL: Record<CeilingBinding, string> = {
  per_request: 'per-request cap',
  day: 'daily cap',
  week: 'weekly cap',
  month: 'monthly cap',
  quarter: 'quarterly cap',
};

/** What the caps leave for this call, the tightest first; null when no cap applies. */
function room(ctx: EvalContext): { binding: CeilingBinding; micros: number } | null {
  const b = ctx.policy.budgets;
  let best: { binding: CeilingBinding; micros: number } | null = b.per_request_usd_micros === null ? null : { binding: 'per_request', micros: b.per_request_usd_micros };
  for (const kind of ['day', 'week', 'month', 'quarter'] as const) {
    const cap = b[CAP_FIELD[kind]];
    if (cap === null) continue;
    const left = cap - ctx.spend[kind].settled - ctx.spend[kind].reserved;
    if (!best || left < best.micros) best = { binding: kind, micros: left };
  }
  return best;
}

/** Null when nothing changes: no output spec, no pricing, or no cap (the caller's ceiling, or none, stands). */
export function fitOutputCeiling(ctx: EvalContext, req: GovernanceRequest): OutputFit | null {
  const out = req.output;
  if (!out || req.estimatedCostMicros === null || req.estimatedCostMicros === undefined) return null;
  const left = room(ctx);
  if (!left) return null;
  const start = out.requested ?? ctx.policy.budgets.default_max_output_tokens;
  const startCost = out.costAt(start);
  if (startCost === null) return null;
  if (startCost <= left.micros) {
    return { costMicros: startCost, outputTokens: start, ceiling: out.requested === null ? { requested: null, applied: start, binding: null } : null };
  }
  let lo = Math.min(MIN_OUTPUT_CEILING, start);
  const loCost = out.costAt(lo);
  // Not even the minimum fits: the full worst case goes to the cap checks, which deny.
  if (loCost === null || loCost > left.micros) return { costMicros: startCost, outputTokens: start, ceiling: null };
  let hi = start - 1;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    const c = out.costAt(mid);
    if (c !== null && c <= left.micros) lo = mid;
    else hi = mid - 1;
  }
  return { costMicros: out.costAt(lo)!, outputTokens: lo, ceiling: { requested: out.requested, applied: lo, binding: left.binding } };
}

/** The `governance.actions` entry saying what Tollgate did to the ceiling. */
export function ceilingAction(c: NonNullable<OutputFit['ceiling']>): { type: string; message: string } {
  const why = c.binding ? ` to fit the ${BINDING_LABEL[c.binding]}` : ' (the request set none; the project has spend caps)';
  if (c.requested === null) return { type: 'max_output_tokens_set', message: `Tollgate set max_output_tokens to ${c.applied}${why}` };
  return { type: 'max_output_tokens_lowered', message: `Tollgate lowered max_output_tokens from ${c.requested} to ${c.applied}${why}` };
}
