/**
 * The pure decision function: given a loaded context (policy, plan, counters) and a request, the
 * first failing check decides. No I/O here, so the order is easy to read and to test.
 *
 * Order (see docs/decisions/governance-evaluation-order.md):
 *   1 firewall → 2 model allow-list → 3 deny rules → 4 pricing available → 5 per-request cap →
 *   6 plan quota → 7 rate limits → 8 period caps (day, week, month, quarter) →
 *   9 monthly threshold → 10 daily spike → 11 review rules → allow.
 *
 * The ordered checks of one decision read top to bottom in `decide`; whether a request matches a
 * rule or the allow-list is src/governance/match.ts.
 */
import type { Decision, GovernanceRequest } from './types';
import { effectiveQuota, PolicyDocument, RateLimit } from './policy';
import type { EvalContext } from './eval-context';
import type { PeriodKind } from './periods';
import { inspectText, residualCategories, FirewallCategory, type RedactCounts } from './firewall';
import { ceilingAction, fitOutputCeiling, type OutputFit } from './output-ceiling';
import { modelAllowed, ruleMatches } from './match';

export interface Outcome {
  decision: Decision;
  code: string;
  reason: string;
  category: string;
  kind: string;
  figures: Record<string, unknown>;
  actions: { type: string; message: string }[];
  retryAfterSeconds?: number;
  /**
   * Firewall categories detected: `block` (the call was blocked), `monitor` (only recorded), `allow`
   * (block mode, let through: categories redacted or flagged by the policy's actions).
   */
  firewall?: FirewallNote;
  /** An allow's reservation when it is the worst case under an output ceiling Tollgate checked (hard caps). */
  reservation?: OutputFit;
}

export type FirewallNote =
  | { mode: 'monitor' | 'block'; categories: FirewallCategory[] }
  | { mode: 'allow'; categories: FirewallCategory[]; redacted: FirewallCategory[]; redacted_counts: RedactCounts; flagged: FirewallCategory[] };

const CATEGORY_ORDER: FirewallCategory[] = ['prompt_injection', 'secret', 'pii'];

/** The governance actions of a call the firewall let through with redactions or flags (categories only, never text). */
export function firewallActions(fw: FirewallNote | undefined): Outcome['actions'] {
  if (fw?.mode !== 'allow') return [];
  const out: Outcome['actions'] = [];
  if (fw.redacted.length) {
    const counts = fw.redacted.map((c) => `${c} (${fw.redacted_counts[c] ?? 0})`).join(', ');
    out.push({ type: 'firewall_redacted', message: `The prompt firewall masked values before dispatch: ${counts}; the provider received placeholders` });
  }
  if (fw.flagged.length) out.push({ type: 'firewall_flagged', message: `The prompt firewall flagged ${fw.flagged.join(', ')}; the policy lets the call through` });
  return out;
}

const fmtUsd = (micros: number) => `$${(micros / 1_000_000).toFixed(micros % 10_000 === 0 ? 2 : 6)}`;

const PERIOD_CODE: Record<PeriodKind, { code: string; cap: keyof PolicyDocument['budgets']; label: string }> = {
  day: { code: 'budget.daily_cap_exceeded', cap: 'daily_usd_micros', label: 'daily' },
  week: { code: 'budget.weekly_cap_exceeded', cap: 'weekly_usd_micros', label: 'weekly' },
  month: { code: 'budget.monthly_cap_exceeded', cap: 'monthly_usd_micros', label: 'monthly' },
  quarter: { code: 'budget.quarterly_cap_exceeded', cap: 'quarterly_usd_micros', label: 'quarterly' },
};

const deny = (d: Omit<Outcome, 'decision'>): Outcome => ({ decision: 'deny', ...d });

export function decide(ctx: EvalContext, req: GovernanceRequest): Outcome {
  const doc = ctx.policy;
  let firewallNote: Outcome['firewall'];

  // 0. The intent the call is joined to refused it: nothing else is evaluated.
  if (req.intentRefusal) {
    return deny({ code: req.intentRefusal.reason_code, reason: req.intentRefusal.message, category: 'workflow_intent', kind: 'call_reservation', figures: { workflow_id: req.workflowId ?? null }, actions: [] });
  }

  // 1. Prompt firewall (only on routes that hand in inspectable text).
  if (req.inspectableText !== undefined && doc.firewall.mode !== 'off') {
    const result = inspectText(req.inspectableText, doc.firewall);
    if (result.detected && doc.firewall.mode === 'monitor') firewallNote = { mode: 'monitor', categories: result.categories };
    else if (result.detected) {
      // Block mode: each category's action (firewall.actions).
      const actions = doc.firewall.actions;
      const categories = result.categories.filter((c) => actions[c] !== 'off');
      const blocked = categories.filter((c) => actions[c] === 'block');
      const redacted = categories.filter((c) => actions[c] === 'redact');
      const flagged = categories.filter((c) => actions[c] === 'flag');
      let counts: RedactCounts = {};
      let unmasked: FirewallCategory[] = [];
      if (blocked.length === 0 && redacted.length > 0) {
        // The surface masks its request; what it would dispatch is checked again, so a value the
        // masking missed (or a surface that cannot mask) blocks the call instead of reaching the provider.
        const r = req.redact?.(redacted, doc.firewall) ?? null;
        unmasked = r ? residualCategories(r.texts, doc.firewall, redacted, r.clean) : redacted;
        if (r) counts = r.counts;
      }
      const denied = CATEGORY_ORDER.filter((c) => blocked.includes(c) || unmasked.includes(c));
      if (denied.length > 0) {
        const why = blocked.length === 0 ? '; it could not be redacted' : '';
        return {
          ...deny({
            code: 'prompt_firewall_blocked',
            reason: `The prompt firewall blocked the request (${denied.join(', ')} detected${why})`,
            category: 'firewall',
            kind: denied[0],
            figures: { firewall_categories: denied },
            actions: [{ type: 'remove_flagged_content', message: `Remove the ${denied.join(' and ')} content from the request and retry` }],
          }),
          firewall: { mode: 'block', categories: denied },
        };
      }
      if (categories.length > 0) firewallNote = { mode: 'allow', categories, redacted, redacted_counts: counts, flagged };
    }
  }
  const withFw = (o: Outcome): Outcome => (firewallNote ? { ...o, firewall: firewallNote } : o);

  // 2. Model allow-list.
  if (!modelAllowed(doc.allowed_models, req)) {
    return withFw(
      deny({
        code: 'policy.model_not_allowed',
        reason: `Model ${req.provider}/${req.model} is not in the project's allowed models`,
        category: 'policy',
        kind: 'model_allow_list',
        figures: { provider: req.provider, model: req.model },
        actions: [{ type: 'use_allowed_model', message: 'Choose a model from the project allow-list' }],
      }),
    );
  }

  // 3. Deny rules.
  const denyRule = doc.deny_rules.find((r) => ruleMatches(r.match, req));
  if (denyRule) {
    return withFw(
      deny({
        code: 'policy.rule_denied',
        reason: denyRule.reason ?? `Denied by policy rule ${denyRule.id}`,
        category: 'policy',
        kind: 'deny_rule',
        figures: { rule_id: denyRule.id },
        actions: [{ type: 'contact_admin', message: 'A project policy rule denies this request; ask a project admin' }],
      }),
    );
  }

  // 4. Pricing.
  if (req.estimatedCostMicros === null || req.estimatedCostMicros === undefined) {
    return withFw(
      deny({
        code: 'budget.pricing_unavailable',
        reason: `No pricing is known for ${req.provider}/${req.model}; its cost cannot be evaluated`,
        category: 'budget',
        kind: 'pricing',
        figures: { provider: req.provider, model: req.model },
        actions: [{ type: 'use_priced_model', message: 'Choose a model with published pricing' }],
      }),
    );
  }

  // Hard caps: the worst case under an output ceiling that fits every cap (set or lowered here).
  const fit = fitOutputCeiling(ctx, req);
  const cost = fit?.costMicros ?? req.estimatedCostMicros;

  // 5. Per-request cap.
  const b = doc.budgets;
  if (b.per_request_usd_micros !== null && cost > b.per_request_usd_micros) {
    return withFw(
      deny({
        code: 'budget.request_cap_exceeded',
        reason: `Estimated cost ${fmtUsd(cost)} exceeds the per-request cap of ${fmtUsd(b.per_request_usd_micros)}`,
        category: 'budget',
        kind: 'request_cap',
        figures: { cap_usd_micros: b.per_request_usd_micros, projected_cost_usd_micros: cost, current_spend_usd_micros: 0 },
        actions: [{ type: 'reduce_request_cost', message: 'Lower max_output_tokens or shorten the input' }],
      }),
    );
  }

  // 6. Plan quota (allowed permits per UTC calendar month).
  const quota = effectiveQuota(ctx.plan, doc);
  const used = ctx.spend.month.requests;
  if (quota !== null && used + 1 > quota) {
    return withFw(
      deny({
        code: 'budget.plan_quota_exceeded',
        reason: `The ${ctx.plan} plan quota of ${quota} requests for this billing period is used up`,
        category: 'budget',
        kind: 'plan_quota',
        figures: { limit: quota, used, plan: ctx.plan, period_start: ctx.periods.month.start, resets_at: ctx.periods.month.end.toISOString() },
        actions: [{ type: 'upgrade_plan', message: 'Upgrade the plan or wait for the next billing period' }],
      }),
    );
  }

  // 7. Rate limits (sliding windows): a hard-deny limit wins over a throttle; among throttles the longest wait wins.
  const tokens = req.estimatedInputTokens + (fit?.outputTokens ?? req.estimatedOutputTokens);
  let rateHit: { rl: RateLimit; used: number; retry: number } | null = null;
  for (const rl of doc.rate_limits) {
    const amount = rl.metric === 'requests' ? 1 : tokens;
    const key = `${rl.id}|${rl.window_seconds}`;
    const usedNow = ctx.rateUsed.get(key) ?? 0;
    if (usedNow + amount > rl.limit) {
      const retry = Math.max(1, ctx.rateRetryAfter?.get(key) ?? rl.window_seconds);
      if (!rateHit || (rl.action === 'deny' && rateHit.rl.action !== 'deny') || (rl.action === rateHit.rl.action && retry > rateHit.retry)) {
        rateHit = { rl, used: usedNow, retry };
      }
    }
  }
  if (rateHit) {
    const { rl, retry } = rateHit;
    const figures = {
      rate_limit_id: rl.id,
      metric: rl.metric,
      limit: rl.limit,
      used: rateHit.used,
      requested: rl.metric === 'requests' ? 1 : tokens,
      window_seconds: rl.window_seconds,
      retry_after_seconds: retry,
    };
    const reason = `Rate limit ${rl.id} (${rl.limit} ${rl.metric} per ${rl.window_seconds}s) reached`;
    if (rl.action === 'throttle') {
      return withFw({
        decision: 'throttle', code: 'budget.rate_limit_throttled', reason, category: 'budget', kind: 'rate_limit', figures,
        actions: [{ type: 'retry_after', message: `Retry after ${retry} seconds` }], retryAfterSeconds: retry,
      });
    }
    return withFw(deny({
      code: 'budget.rate_limit_exceeded',
      reason,
      category: 'budget',
      kind: 'rate_limit',
      figures,
      actions: [{ type: 'reduce_request_rate', message: `Send fewer ${rl.metric} per ${rl.window_seconds} seconds` }],
    }));
  }

  // 8. Period caps: the reservation must fit every period (projected = settled + reserved + this estimate).
  for (const kind of ['day', 'week', 'month', 'quarter'] as const) {
    const cap = b[PERIOD_CODE[kind].cap] as number | null;
    if (cap === null) continue;
    const current = ctx.spend[kind].settled + ctx.spend[kind].reserved;
    if (current + cost > cap) {
      return withFw(
        deny({
          code: PERIOD_CODE[kind].code,
          reason: `Projected ${PERIOD_CODE[kind].label} spend ${fmtUsd(current + cost)} would exceed the ${PERIOD_CODE[kind].label} cap of ${fmtUsd(cap)}`,
          category: 'budget',
          kind: `${PERIOD_CODE[kind].label}_cap`,
          figures: { cap_usd_micros: cap, current_spend_usd_micros: current, projected_cost_usd_micros: cost, projected_spend_usd_micros: current + cost,
            period: kind, period_start: ctx.periods[kind].start, resets_at: ctx.periods[kind].end.toISOString() },
          actions: [{ type: 'wait_for_period_reset', message: `The ${PERIOD_CODE[kind].label} budget resets at ${ctx.periods[kind].end.toISOString()}` }],
        }),
      );
    }
  }

  // 9. Monthly threshold.
  if (b.monthly_threshold_ratio !== null && b.monthly_usd_micros !== null) {
    const current = ctx.spend.month.settled + ctx.spend.month.reserved;
    const threshold = Math.floor(b.monthly_usd_micros * b.monthly_threshold_ratio);
    if (current + cost > threshold) {
      const o: Outcome = {
        decision: b.monthly_threshold_action, code: 'budget.monthly_threshold_exceeded',
        reason: `Projected monthly spend ${fmtUsd(current + cost)} exceeds ${Math.round(b.monthly_threshold_ratio * 100)}% of the monthly cap`,
        category: 'budget', kind: 'monthly_threshold',
        figures: { cap_usd_micros: b.monthly_usd_micros, threshold_ratio: b.monthly_threshold_ratio, threshold_usd_micros: threshold,
          current_spend_usd_micros: current, projected_cost_usd_micros: cost, projected_spend_usd_micros: current + cost },
        actions: b.monthly_threshold_action === 'review'
          ? [{ type: 'request_review', message: 'Monthly spend is near the cap; an admin must approve this request' }]
          : [{ type: 'raise_budget', message: 'Monthly spend is near the cap; raise the cap or the threshold' }],
      };
      return withFw(o);
    }
  }

  // 10. Daily spike.
  const spike = b.daily_spike;
  if (spike) {
    const days = ctx.previousDaysSpend.slice(-spike.baseline_days);
    const baseline = Math.floor(days.reduce((a, x) => a + x, 0) / spike.baseline_days);
    const today = ctx.spend.day.settled + ctx.spend.day.reserved;
    const limit = Math.floor(baseline * spike.multiplier);
    if (baseline >= spike.min_baseline_usd_micros && today + cost > limit) {
      return withFw({
        decision: spike.action, code: 'budget.daily_spike_detected',
        reason: `Projected spend today ${fmtUsd(today + cost)} is above ${spike.multiplier}× the ${spike.baseline_days}-day average of ${fmtUsd(baseline)}`,
        category: 'budget', kind: 'daily_spike',
        figures: { baseline_usd_micros: baseline, baseline_days: spike.baseline_days, multiplier: spike.multiplier, spike_limit_usd_micros: limit,
          current_spend_usd_micros: today, projected_cost_usd_micros: cost, projected_spend_usd_micros: today + cost },
        actions: [{ type: spike.action === 'review' ? 'request_review' : 'investigate_spend', message: 'Spend today is unusually high compared with recent days' }],
      });
    }
  }

  // 11. Human review rules.
  const review = doc.review_rules.find(
    (r) => ruleMatches(r.match, req) && (r.min_estimated_cost_usd_micros === undefined || cost >= r.min_estimated_cost_usd_micros),
  );
  if (review) {
    return withFw({
      decision: 'review', code: 'policy.review_required', reason: review.reason ?? `Policy rule ${review.id} requires human review`,
      category: 'policy', kind: 'review_rule',
      figures: { rule_id: review.id, projected_cost_usd_micros: cost, ...(review.min_estimated_cost_usd_micros !== undefined ? { review_threshold_usd_micros: review.min_estimated_cost_usd_micros } : {}) },
      actions: [{ type: 'request_review', message: 'An admin must attest this permit before it is used' }],
    });
  }

  const ceiling = fit?.ceiling ?? null;
  return withFw({
    decision: 'allow', code: 'policy.active_policy_candidate', reason: 'Allowed by the active project policy', category: 'policy', kind: 'active_policy',
    figures: { projected_cost_usd_micros: cost, policy_version: ctx.policyVersion, ...(ceiling ? { output_ceiling: ceiling } : {}) },
    actions: [...(ceiling ? [ceilingAction(ceiling)] : []), ...firewallActions(firewallNote), { type: 'proceed', message: 'The request may proceed' }],
    ...(fit ? { reservation: fit } : {}),
  });
}

export const OUTCOME_LABEL: Record<Decision, string> = {
  allow: 'allowed',
  deny: 'denied',
  review: 'review_required',
  throttle: 'throttled',
};

/**
 * For an allow decided on `ctx`: the largest counter values under which decide() still allows.
 * Every counter check is "counter + this request ≤ limit", so while the counters stay at or below
 * these bounds the decision stands and can be applied later, under the lock, after re-checking
 * only the counters (the optimistic path of `evaluate`). Null when the decision depends on
 * counters not bounded here: the daily spike baseline reads the previous days.
 */
export interface AllowBounds {
  /** Max settled + reserved per period (null = no cap on it). */
  spendTotal: Record<PeriodKind, number | null>;
  /** Max allowed permits already counted in the month row (plan quota); null = unlimited. */
  monthRequests: number | null;
  /** Per rate limit of the policy: the amount this request consumes and the max used before it. */
  rates: { rl: RateLimit; amount: number; maxUsed: number }[];
}

export function allowBounds(ctx: EvalContext, req: GovernanceRequest, allow: Outcome): AllowBounds | null {
  const b = ctx.policy.budgets;
  if (b.daily_spike) return null;
  const cost = allow.reservation?.costMicros ?? req.estimatedCostMicros ?? 0;
  const spendTotal = {} as Record<PeriodKind, number | null>;
  for (const kind of ['day', 'week', 'month', 'quarter'] as const) {
    const cap = b[PERIOD_CODE[kind].cap] as number | null;
    spendTotal[kind] = cap === null ? null : cap - cost;
  }
  if (b.monthly_threshold_ratio !== null && b.monthly_usd_micros !== null) {
    const t = Math.floor(b.monthly_usd_micros * b.monthly_threshold_ratio) - cost;
    spendTotal.month = spendTotal.month === null ? t : Math.min(spendTotal.month, t);
  }
  const quota = effectiveQuota(ctx.plan, ctx.policy);
  const tokens = req.estimatedInputTokens + (allow.reservation?.outputTokens ?? req.estimatedOutputTokens);
  return {
    spendTotal,
    monthRequests: quota === null ? null : quota - 1,
    rates: ctx.policy.rate_limits.map((rl) => {
      const amount = rl.metric === 'requests' ? 1 : tokens;
      return { rl, amount, maxUsed: rl.limit - amount };
    }),
  };
}
