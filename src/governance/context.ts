/**
 * The evaluation context of a decision: plan and policy (cached by the pipeline, re-checked in its
 * statement) and the counters — spend per period, previous days for spike detection, rate usage
 * on the database clock.
 */
import type { Queryable } from '../db/pool';
import { getPolicy, StoredPolicy } from '../db/repositories/policies';
import { readRateUsage, readSpendRows } from '../db/repositories/spend';
import { findProjectPlan, type Plan } from '../db/repositories/projects';
import type { EvalContext } from './eval-context';
import { currentPeriods, PERIOD_KINDS, PeriodKind, previousDays } from './periods';
import type { GovernanceRequest } from './types';
import type { PolicyDocument } from './policy';

export interface PlanPolicy {
  plan: Plan;
  policy: StoredPolicy;
}

export async function loadPlanPolicy(q: Queryable, projectId: string): Promise<PlanPolicy> {
  const plan = await findProjectPlan(q, projectId);
  if (!plan) throw new Error(`project ${projectId} not found`);
  return { plan, policy: await getPolicy(q, projectId) };
}

/** A context without counters: what the optimistic path predicts with (the bounds re-check them). */
export function predictedContext(now: Date, known: PlanPolicy): EvalContext {
  const periods = currentPeriods(now);
  const zero = { reserved: 0, settled: 0, requests: 0 };
  return {
    now, plan: known.plan, policy: known.policy.document, policyVersion: known.policy.version, periods,
    spend: { day: zero, week: zero, month: zero, quarter: zero }, previousDaysSpend: [], rateUsed: new Map(),
  };
}

/** Tokens a request may count against a `tokens` rate limit: input plus the largest output ceiling it may be allowed. */
export function requestTokens(req: GovernanceRequest, policy: PolicyDocument): number {
  const output = req.output && req.output.requested === null ? Math.max(req.estimatedOutputTokens, policy.budgets.default_max_output_tokens) : req.estimatedOutputTokens;
  return req.estimatedInputTokens + output;
}

/** Reads the counters the decision needs (plan and policy too unless given); rate usage on the database clock. */
export async function loadContext(q: Queryable, req: GovernanceRequest, now: Date, known?: PlanPolicy): Promise<EvalContext> {
  const projectId = req.projectId;
  const { plan, policy } = known ?? (await loadPlanPolicy(q, projectId));
  const periods = currentPeriods(now);
  const baselineDays = policy.document.budgets.daily_spike?.baseline_days ?? 0;
  const prevDays = previousDays(now, baselineDays);
  const keys = [...PERIOD_KINDS.map((k) => ({ kind: k, start: periods[k].start })), ...prevDays.map((s) => ({ kind: 'day' as const, start: s }))];
  const [spendRows, rates] = await Promise.all([
    readSpendRows(q, projectId, keys),
    readRateUsage(
      q,
      projectId,
      policy.document.rate_limits.map((rl) => ({ limitId: rl.id, windowSeconds: rl.window_seconds, limit: rl.limit, amount: rl.metric === 'requests' ? 1 : requestTokens(req, policy.document) })),
    ),
  ]);
  const rateUsed = new Map([...rates].map(([k, v]) => [k, v.used]));
  const rateRetryAfter = new Map([...rates].map(([k, v]) => [k, v.retryAfterSeconds]));
  const find = (kind: PeriodKind, start: string) => spendRows.find((r) => r.period_kind === kind && r.period_start === start);
  const spend = Object.fromEntries(
    PERIOD_KINDS.map((k) => {
      const r = find(k, periods[k].start);
      return [k, { reserved: r ? Number(r.reserved_micros) : 0, settled: r ? Number(r.settled_micros) : 0, requests: r ? Number(r.requests) : 0 }];
    }),
  ) as EvalContext['spend'];
  const previousDaysSpend = prevDays.map((s) => {
    const r = find('day', s);
    return r ? Number(r.reserved_micros) + Number(r.settled_micros) : 0;
  });
  return { now, plan, policy: policy.document, policyVersion: policy.version, periods, spend, previousDaysSpend, rateUsed, rateRetryAfter };
}
