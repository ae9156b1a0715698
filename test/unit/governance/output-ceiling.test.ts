/** Hard caps (pure): the reservation is the worst case under an output ceiling Tollgate sets or lowers to fit every cap. */
import { allowBounds, decide } from '../../../src/governance/evaluate';
import type { EvalContext } from '../../../src/governance/eval-context';
import { fitOutputCeiling, MIN_OUTPUT_CEILING } from '../../../src/governance/output-ceiling';
import { currentPeriods } from '../../../src/governance/periods';
import { policyDocumentSchema } from '../../../src/governance/policy';
import type { GovernanceRequest } from '../../../src/governance/types';
import { DEFAULT_OUTPUT_TOKENS_ESTIMATE } from '../../../src/pricing';

const now = new Date('2026-03-12T10:00:00Z');
const zero = { reserved: 0, settled: 0, requests: 0 };

function ctx(policy: unknown, spent: Partial<Record<'day' | 'week' | 'month' | 'quarter', number>> = {}): EvalContext {
  const spend = { day: { ...zero }, week: { ...zero }, month: { ...zero }, quarter: { ...zero } };
  for (const [k, v] of Object.entries(spent)) spend[k as keyof typeof spend] = { reserved: 0, settled: v, requests: 0 };
  return { now, plan: 'production', policy: policyDocumentSchema.parse(policy), policyVersion: 1, periods: currentPeriods(now), spend, previousDaysSpend: [], rateUsed: new Map() };
}

// 100 µ$ of input, 2 µ$ per output token (whole micro-USD keep the arithmetic readable).
const costAt = (c: number) => 100 + 2 * c;
function req(requested: number | null): GovernanceRequest {
  return {
    projectId: 'proj_x', requestId: 'exec_req_x', route: 'executions', operation: 'generate.text', provider: 'openai', model: 'gpt-4o-mini',
    estimatedInputTokens: 10, estimatedOutputTokens: requested ?? DEFAULT_OUTPUT_TOKENS_ESTIMATE, estimatedCostMicros: costAt(requested ?? DEFAULT_OUTPUT_TOKENS_ESTIMATE),
    output: { requested, costAt },
  };
}

describe('fitOutputCeiling', () => {
  it('no cap: the caller ceiling (or none) stands', () => {
    expect(fitOutputCeiling(ctx({}), req(null))).toBeNull();
    expect(fitOutputCeiling(ctx({}), req(5000))).toBeNull();
  });

  it('a cap and no ceiling: Tollgate sets the default ceiling when its worst case fits', () => {
    expect(fitOutputCeiling(ctx({ budgets: { daily_usd_micros: 1_000_000 } }), req(null))).toEqual({
      costMicros: costAt(DEFAULT_OUTPUT_TOKENS_ESTIMATE), outputTokens: DEFAULT_OUTPUT_TOKENS_ESTIMATE, ceiling: { requested: null, applied: DEFAULT_OUTPUT_TOKENS_ESTIMATE, binding: null },
    });
  });

  it('a ceiling that fits stands unchanged', () => {
    expect(fitOutputCeiling(ctx({ budgets: { daily_usd_micros: 1_000_000 } }), req(300))).toEqual({ costMicros: 700, outputTokens: 300, ceiling: null });
  });

  it('lowers to the largest ceiling whose worst case fits the tightest cap', () => {
    // Daily: 2,000 cap, 1,500 spent → 500 left; weekly has more room. 100 + 2c ≤ 500 → c = 200.
    const fit = fitOutputCeiling(ctx({ budgets: { daily_usd_micros: 2000, weekly_usd_micros: 100_000 } }, { day: 1500, week: 1500 }), req(4000));
    expect(fit).toEqual({ costMicros: 500, outputTokens: 200, ceiling: { requested: 4000, applied: 200, binding: 'day' } });
    // The per-request cap binds when it is the tightest.
    expect(fitOutputCeiling(ctx({ budgets: { per_request_usd_micros: 301, daily_usd_micros: 100_000 } }), req(null))!.ceiling).toEqual({ requested: null, applied: 100, binding: 'per_request' });
  });

  it('the policy chooses the ceiling set on a request without one', () => {
    expect(fitOutputCeiling(ctx({ budgets: { daily_usd_micros: 1_000_000, default_max_output_tokens: 4000 } }), req(null))!.ceiling).toEqual({ requested: null, applied: 4000, binding: null });
  });

  it('below the minimum useful output nothing is lowered (the cap checks deny)', () => {
    const left = costAt(MIN_OUTPUT_CEILING) - 1;
    expect(fitOutputCeiling(ctx({ budgets: { daily_usd_micros: left } }), req(4000))).toEqual({ costMicros: costAt(4000), outputTokens: 4000, ceiling: null });
  });
});

describe('decide with hard caps', () => {
  it('an allow reports the lowered ceiling in actions and figures, and its bounds use the worst case', () => {
    const c = ctx({ budgets: { daily_usd_micros: 2000 } }, { day: 1500 });
    const o = decide(c, req(4000));
    expect(o.decision).toBe('allow');
    expect(o.actions[0]).toEqual({ type: 'max_output_tokens_lowered', message: 'Tollgate lowered max_output_tokens from 4000 to 200 to fit the daily cap' });
    expect(o.actions[1].type).toBe('proceed');
    expect(o.figures.output_ceiling).toEqual({ requested: 4000, applied: 200, binding: 'day' });
    expect(o.figures.projected_cost_usd_micros).toBe(500);
    // Applied later, the allow holds only while settled + reserved stays ≤ 2,000 − 500.
    expect(allowBounds(c, req(4000), o)!.spendTotal.day).toBe(1500);
  });

  it('no room even for the minimum → the daily cap denies as before', () => {
    const o = decide(ctx({ budgets: { daily_usd_micros: 2000 } }, { day: 1990 }), req(4000));
    expect(o).toMatchObject({ decision: 'deny', code: 'budget.daily_cap_exceeded' });
    expect(o.figures.projected_cost_usd_micros).toBe(costAt(4000));
  });

  it('a token rate limit counts the applied ceiling, not the requested one', () => {
    const c = ctx({ budgets: { daily_usd_micros: 2000 }, rate_limits: [{ id: 't', metric: 'tokens', limit: 300, window_seconds: 60 }] }, { day: 1500 });
    // 10 input + 200 applied = 210 ≤ 300 (4,010 requested would not fit).
    expect(decide(c, req(4000)).decision).toBe('allow');
  });
});
