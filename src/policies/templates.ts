/**
 * Policy presets (GET /v1/policy-templates). Each template is one policy of the addressable-policy
 * model (src/policies/service.ts): POST /v1/policies {"template_id": "...", "config": {overrides}}
 * instantiates it; `config` is merged over the template's with RFC 7396 semantics.
 */
import type { PolicyType } from './types';

export interface PolicyTemplate {
  id: string;
  name: string;
  description: string;
  category: 'cost' | 'models' | 'review' | 'security' | 'traffic';
  type: PolicyType;
  config: Record<string, unknown>;
}

export const POLICY_TEMPLATES: readonly PolicyTemplate[] = [
  {
    id: 'cost-guard',
    name: 'Cost guard',
    description:
      'Caps a single call at $2, a day at $50 and a month at $1,000; calls that would take monthly spend past 80% of the cap need human review.',
    category: 'cost',
    type: 'budget',
    config: {
      per_request_usd_micros: 2_000_000,
      daily_usd_micros: 50_000_000,
      monthly_usd_micros: 1_000_000_000,
      monthly_threshold_ratio: 0.8,
      monthly_threshold_action: 'review',
    },
  },
  {
    id: 'spend-spike-guard',
    name: 'Daily spend spike guard',
    description: 'Denies calls once today\'s spend would exceed 3x the average of the previous 7 days (inactive until there is a baseline).',
    category: 'cost',
    type: 'budget',
    config: { daily_spike: { multiplier: 3, baseline_days: 7, min_baseline_usd_micros: 1_000_000, action: 'deny' } },
  },
  {
    id: 'model-allow-list',
    name: 'Model allow-list (small, cheap models)',
    description: 'Only the small general-purpose models of each provider may be used; edit `models` to your own list (`provider/model`, `*` wildcards).',
    category: 'models',
    type: 'model_allow_list',
    config: {
      models: ['openai/gpt-4o-mini', 'openai/text-embedding-3-small', 'anthropic/claude-haiku-*', 'google/gemini-2.5-flash*', 'deepseek/deepseek-chat', 'mistral/mistral-small-*'],
    },
  },
  {
    id: 'human-review-expensive-calls',
    name: 'Human review for expensive calls',
    description: 'Any call estimated at $1 or more gets decision `review` (policy.review_required) until an admin attests it.',
    category: 'review',
    type: 'review_rule',
    config: { match: {}, min_estimated_cost_usd_micros: 1_000_000, reason: 'Calls estimated at $1 or more need human sign-off' },
  },
  {
    id: 'review-premium-models',
    name: 'Human review for premium models',
    description: 'Calls to the largest models (GPT-4o, Claude Opus, Gemini Pro) need human sign-off.',
    category: 'review',
    type: 'review_rule',
    config: { match: { model: ['gpt-4o', 'claude-opus-*', 'gemini-2.5-pro'] }, reason: 'Premium models need human sign-off' },
  },
  {
    id: 'pii-firewall-strict',
    name: 'PII firewall, strict',
    description: 'Blocks prompts with injection attempts, secrets or personal data (e-mail addresses and phone numbers included) on the execution and proxy routes, instead of redacting personal data.',
    category: 'security',
    type: 'firewall',
    config: { mode: 'block', detect_pii_email: true, detect_pii_phone: true, actions: { prompt_injection: 'block', secret: 'block', pii: 'block' } },
  },
  {
    id: 'firewall-monitor',
    name: 'Firewall in monitor mode',
    description: 'Records what the firewall would block without blocking it; a safe first step before `pii-firewall-strict`.',
    category: 'security',
    type: 'firewall',
    config: { mode: 'monitor', detect_pii_email: true, detect_pii_phone: true },
  },
  {
    id: 'no-image-generation',
    name: 'Deny image generation',
    description: 'Denies generate.image (policy.rule_denied).',
    category: 'security',
    type: 'deny_rule',
    config: { match: { operation: 'generate.image' }, reason: 'Image generation is disabled for this project' },
  },
  {
    id: 'request-rate-throttle',
    name: 'Request rate throttle',
    description: 'At most 60 allowed requests per minute; more are throttled with Retry-After.',
    category: 'traffic',
    type: 'rate_limit',
    config: { metric: 'requests', limit: 60, window_seconds: 60, action: 'throttle' },
  },
  {
    id: 'token-rate-limit',
    name: 'Token rate limit',
    description: 'At most 1,000,000 estimated tokens per hour; more are denied (budget.rate_limit_exceeded).',
    category: 'traffic',
    type: 'rate_limit',
    config: { metric: 'tokens', limit: 1_000_000, window_seconds: 3600, action: 'deny' },
  },
];

export function findTemplate(id: string): PolicyTemplate | null {
  return POLICY_TEMPLATES.find((t) => t.id === id) ?? null;
}

export function templateView(t: PolicyTemplate) {
  return { object: 'policy_template', id: t.id, name: t.name, description: t.description, category: t.category, policy: { type: t.type, config: t.config } };
}
