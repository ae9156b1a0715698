/**
 * What a decision is made from: the project's policy, plan and counters, loaded once per decision
 * (src/governance/context.ts) and read by the pure checks (src/governance/evaluate.ts,
 * src/governance/output-ceiling.ts).
 */
import type { Plan } from '../db/repositories/projects';
import type { PolicyDocument } from './policy';
import type { Period, PeriodKind } from './periods';

export interface SpendFigures {
  reserved: number;
  settled: number;
  requests: number;
}

export interface EvalContext {
  now: Date;
  plan: Plan;
  policy: PolicyDocument;
  policyVersion: number;
  periods: Record<PeriodKind, Period>;
  spend: Record<PeriodKind, SpendFigures>;
  /** Spend (settled + reserved) of each of the previous full UTC days, oldest first. */
  previousDaysSpend: number[];
  /** Used capacity per rate limit in its sliding window (database clock), keyed `${id}|${window_seconds}`. */
  rateUsed: Map<string, number>;
  /** Seconds until this request's amount fits each limit's window (database clock); the window length when unknown. */
  rateRetryAfter?: Map<string, number>;
}
