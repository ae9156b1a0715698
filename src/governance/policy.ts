import { z } from 'zod';
import type { Plan } from '../db/repositories/projects';

/**
 * The per-project governance policy document: the single zod schema for storage, HTTP and CLI.
 * Every field has a default, so `{}` is a valid document (no caps, no rules, firewall in `block`:
 * injection and secrets blocked, personal data redacted).
 */

const micros = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const nullableMicros = micros.nullable().default(null);
const stringOrList = z.union([z.string().min(1).max(300), z.array(z.string().min(1).max(300)).min(1).max(200)]);

/** All given fields must match; a list matches any of its values; `*` is a wildcard. */
export const matchSchema = z
  .object({
    provider: stringOrList.optional(),
    model: stringOrList.optional(),
    operation: stringOrList.optional(),
    route: stringOrList.optional(),
    /** Any tool the request offers the model matches (by name; a request that offers none does not match). */
    tool: stringOrList.optional(),
    /** Every key must be present in the request metadata with a matching value. */
    metadata: z.record(z.string().min(1).max(200), stringOrList).optional(),
  })
  .strict();
export type MatchSpec = z.infer<typeof matchSchema>;

const ruleId = z.string().min(1).max(100).regex(/^[A-Za-z0-9_.:-]+$/, 'use letters, digits, _ . : -');

export const denyRuleSchema = z
  .object({
    id: ruleId,
    match: matchSchema.prefault({}),
    /** Shown as display_reason when the rule fires. */
    reason: z.string().min(1).max(500).optional(),
  })
  .strict();

export const reviewRuleSchema = z
  .object({
    id: ruleId,
    match: matchSchema.prefault({}),
    /** Fires only when the estimated cost is at least this (combined with match). */
    min_estimated_cost_usd_micros: micros.optional(),
    reason: z.string().min(1).max(500).optional(),
  })
  .strict();

export const rateLimitSchema = z
  .object({
    id: ruleId,
    metric: z.enum(['requests', 'tokens']),
    limit: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
    window_seconds: z.number().int().min(1).max(31 * 86400),
    action: z.enum(['deny', 'throttle']).default('throttle'),
  })
  .strict();
export type RateLimit = z.infer<typeof rateLimitSchema>;

const firewallAction = z.enum(['block', 'redact', 'flag', 'off']);
export type FirewallAction = z.infer<typeof firewallAction>;

export const policyDocumentSchema = z
  .object({
    budgets: z
      .object({
        per_request_usd_micros: nullableMicros,
        daily_usd_micros: nullableMicros,
        weekly_usd_micros: nullableMicros,
        monthly_usd_micros: nullableMicros,
        quarterly_usd_micros: nullableMicros,
        /** Fires when projected monthly spend exceeds ratio × monthly cap (needs a monthly cap). */
        monthly_threshold_ratio: z.number().gt(0).max(1).nullable().default(null),
        monthly_threshold_action: z.enum(['deny', 'review']).default('review'),
        /** Hard caps: the output-token ceiling Tollgate sets on a request that names none while a spend cap applies. */
        default_max_output_tokens: z.number().int().min(16).max(1_000_000).default(1024),
        /**
         * Fires when projected spend of the current UTC day exceeds baseline × multiplier, where
         * baseline = average daily spend (settled + reserved) of the previous `baseline_days` full
         * UTC days. Inactive while the baseline is below `min_baseline_usd_micros` (a new project).
         */
        daily_spike: z
          .object({
            multiplier: z.number().gt(1).max(1000),
            baseline_days: z.number().int().min(1).max(90).default(7),
            min_baseline_usd_micros: micros.default(1),
            action: z.enum(['deny', 'review']).default('deny'),
          })
          .strict()
          .nullable()
          .default(null),
      })
      .strict()
      .prefault({}),
    /** Allowed permits per billing period (UTC calendar month); null = the plan's quota. */
    plan_quota: z
      .object({ requests_per_period_override: z.number().int().min(0).nullable().default(null) })
      .strict()
      .prefault({}),
    rate_limits: z.array(rateLimitSchema).max(50).default([]),
    /** null = every model allowed; entries are `model` or `provider/model`, `*` wildcards. */
    allowed_models: z.array(z.string().min(1).max(300)).max(500).nullable().default(null),
    deny_rules: z.array(denyRuleSchema).max(200).default([]),
    review_rules: z.array(reviewRuleSchema).max(200).default([]),
    firewall: z
      .object({
        /** `block` applies each category's action; `monitor` only records what was detected; `off` does not run the firewall. */
        mode: z.enum(['off', 'monitor', 'block']).default('block'),
        detect_pii_email: z.boolean().default(false),
        detect_pii_phone: z.boolean().default(false),
        /**
         * What the firewall does with each detector category in `block` mode: `block` (deny the
         * call), `redact` (mask the matched values before the provider sees them; secrets and
         * personal data only), `flag` (let the call through and record it), `off` (ignore it).
         */
        actions: z
          .object({
            // Injection and jailbreaks have no span that masking would neutralise: no `redact`.
            prompt_injection: z.enum(['block', 'flag', 'off'], { error: (iss) => (iss.input === 'redact' ? 'redact is not available for prompt_injection: there is no span to mask; use block, flag or off' : undefined) }).default('block'),
            secret: firewallAction.default('block'),
            pii: firewallAction.default('redact'),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .superRefine((doc, ctx) => {
    const ids = new Set<string>();
    doc.rate_limits.forEach((r, i) => {
      if (ids.has(r.id)) ctx.addIssue({ code: 'custom', path: ['rate_limits', i, 'id'], message: `duplicate rate limit id "${r.id}"` });
      ids.add(r.id);
    });
    if (doc.budgets.monthly_threshold_ratio !== null && doc.budgets.monthly_usd_micros === null) {
      ctx.addIssue({ code: 'custom', path: ['budgets', 'monthly_threshold_ratio'], message: 'a monthly threshold needs budgets.monthly_usd_micros' });
    }
  });

export type PolicyDocument = z.infer<typeof policyDocumentSchema>;

export function defaultPolicyDocument(): PolicyDocument {
  return policyDocumentSchema.parse({});
}

/** Requests per billing period (UTC calendar month) by plan; null = unlimited. */
export const PLAN_QUOTAS: Record<Plan, number | null> = {
  starter: 10_000,
  production: 1_000_000,
  enterprise: null,
};

export function effectiveQuota(plan: Plan, doc: PolicyDocument): number | null {
  return doc.plan_quota.requests_per_period_override ?? PLAN_QUOTAS[plan];
}

/** RFC 7396 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const base: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete base[k];
    else base[k] = mergePatch(base[k], v);
  }
  return base;
}
