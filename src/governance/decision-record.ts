/**
 * What a decision writes and answers: the permit row, its reservation and rate consumption, the
 * permit events, and the decision shape (from an evaluation outcome or rebuilt from a stored permit).
 */
import type { NewEvent } from '../events/types';
import type { NewPermit, PermitRecord } from '../db/repositories/permits';
import type { EvalContext } from './eval-context';
import type { Outcome } from './evaluate';
import { OUTCOME_LABEL } from './evaluate';
import { PERIOD_KINDS } from './periods';
import type { GovernanceRequest, PermitDecision } from './types';

/** Default lifetime of an allow permit (and so of its reservation) when the caller gives none. */
export const DEFAULT_ALLOW_TTL_SECONDS = 600;
/** A permit awaiting human review stays attestable this long. */
export const DEFAULT_REVIEW_TTL_SECONDS = 24 * 3600;

export interface EvaluateOptions {
  /** false = dry run: no permit row, no reservation, no rate or quota consumption, no events. */
  persist: boolean;
  /** Use this permit id (e.g. from a Temporal workflow); a repeat with a stored id returns the stored decision. */
  permitId?: string;
  /** Lifetime of an allow permit and its reservation (default 600 s). */
  ttlSeconds?: number;
  /** Lineage: the permit this one revalidates or attests. */
  parentPermitId?: string | null;
  idempotencyKey?: string | null;
  /** Stored in permits.metadata (not evaluated). */
  permitMetadata?: Record<string, unknown>;
  /** Added to the decision's `metadata` (e.g. where a permit's estimate came from); not evaluated. */
  decisionMetadata?: Record<string, unknown>;
  /**
   * The governed-call pipeline's in-flight marker, written on the permit of an allow (and only of
   * one) in the same statement: what closing the call needs and its deadline. The permit's
   * decision events and the dispatch's first events are then not stored: they are derived from the
   * permit and the call's record (src/executions/lifecycle-events.ts).
   */
  onAllow?: { closing: Record<string, unknown>; deadline: Date };
  /**
   * The allow's call is recorded with a lifecycle by a caller that keeps no in-flight mark (a
   * job: Temporal's activity timeouts detect its crashes): its permit.allowed and
   * permit.expiry_scheduled are derived from the permit and the record, so they are not stored,
   * and nothing is written on the permit for reconciliation.
   */
  derivePermitEvents?: boolean;
}

/** The decision as the caller sees it: `extraMeta` joins the decision's metadata. */
export function decisionFromOutcome(
  o: Outcome,
  permitId: string,
  issue: { evaluatedAt: Date; expiresAt: Date | null; extraMeta?: Record<string, unknown> },
): PermitDecision {
  const { evaluatedAt, expiresAt, extraMeta = {} } = issue;
  const d: PermitDecision = {
    permit_id: permitId,
    decision: o.decision,
    reason_code: o.code,
    display_reason: o.reason,
    decision_details: {
      decision: o.decision,
      code: o.code,
      reason: o.reason,
      reason_detail: { category: o.category, kind: o.kind, outcome: OUTCOME_LABEL[o.decision] },
      ...o.figures,
    },
    actions: o.actions,
    metadata: {
      evaluated_at: evaluatedAt.toISOString(),
      ...(o.firewall ? { firewall: { ...o.firewall } } : {}),
      ...extraMeta,
    },
    expires_at: expiresAt ? expiresAt.toISOString() : null,
  };
  if (o.retryAfterSeconds !== undefined) d.retry_after_seconds = o.retryAfterSeconds;
  if (o.decision === 'allow' && o.reservation?.ceiling) d.max_output_tokens = o.reservation.ceiling.applied;
  return d;
}

/** Rebuilds the decision shape from a stored permit. */
export function decisionFromPermit(p: PermitRecord): PermitDecision {
  const meta = (p.metadata?.decision_metadata as PermitDecision['metadata'] | undefined) ?? { evaluated_at: new Date(p.issued_at).toISOString() };
  const d: PermitDecision = {
    permit_id: p.id,
    decision: p.decision,
    reason_code: p.reason_code,
    display_reason: p.display_reason,
    decision_details: p.decision_details,
    actions: p.actions,
    metadata: meta,
    expires_at: p.expires_at ? new Date(p.expires_at).toISOString() : null,
  };
  const retry = p.decision_details?.retry_after_seconds;
  if (p.decision === 'throttle' && typeof retry === 'number') d.retry_after_seconds = retry;
  const ceiling = p.decision_details?.output_ceiling as { applied?: unknown } | undefined;
  if (p.decision === 'allow' && typeof ceiling?.applied === 'number') d.max_output_tokens = ceiling.applied;
  return d;
}

/** A recorded call's permit events that its record derives (src/executions/lifecycle-events.ts) instead of storing. */
const DERIVED_PERMIT_EVENTS = new Set(['permit.allowed', 'permit.expiry_scheduled']);

export function permitEvents(req: GovernanceRequest, p: Pick<PermitRecord, 'id' | 'expires_at'>, o: Outcome, at: Date): NewEvent[] {
  const base = { projectId: req.projectId, provider: req.provider, model: req.model, permitId: p.id, requestId: req.requestId, timestamp: at };
  const out: NewEvent[] = [];
  if (o.firewall?.mode === 'block') {
    // Category only: never the rule or the matched text.
    out.push({ ...base, eventType: 'firewall.blocked', source: 'firewall', phase: 'firewall', metadata: { category: o.firewall.categories[0], categories: o.firewall.categories } });
  }
  if (o.decision === 'allow' && o.firewall?.mode === 'allow') {
    // Categories and counts only: never the rule, the matched text or a placeholder's value.
    const fw = o.firewall;
    if (fw.redacted.length) {
      const counts = Object.fromEntries(fw.redacted.map((c) => [c, fw.redacted_counts[c] ?? 0]));
      out.push({ ...base, eventType: 'firewall.redacted', source: 'firewall', phase: 'firewall', metadata: { categories: fw.redacted, counts } });
    }
    if (fw.flagged.length) out.push({ ...base, eventType: 'firewall.flagged', source: 'firewall', phase: 'firewall', metadata: { categories: fw.flagged } });
  }
  const type = o.decision === 'allow' ? 'permit.allowed' : o.decision === 'review' ? 'permit.challenged' : 'permit.denied';
  out.push({
    ...base,
    eventType: type,
    source: 'permits',
    phase: 'permit',
    metadata: {
      decision: o.decision,
      reason: o.reason,
      reason_code: o.code,
      route: req.route,
      operation: req.operation,
      workflow_id: req.workflowId ?? null,
      ...(req.tools?.length ? { tools: req.tools } : {}),
      ...(o.retryAfterSeconds !== undefined ? { retry_after_seconds: o.retryAfterSeconds } : {}),
      ...(o.decision === 'allow' ? { reserved_cost_usd_micros: o.reservation?.costMicros ?? req.estimatedCostMicros ?? 0 } : {}),
      ...(o.firewall?.mode === 'monitor' ? { firewall_monitor_categories: o.firewall.categories } : {}),
    },
  });
  if (p.expires_at) {
    out.push({ ...base, eventType: 'permit.expiry_scheduled', source: 'permits', phase: 'permit', metadata: { expires_at: new Date(p.expires_at).toISOString() } });
  }
  return out;
}

/** What persisting outcome `o` writes: the permit row, its reservation, rate consumption and events. */
export function permitWrite(req: GovernanceRequest, opts: EvaluateOptions, decided: { permitId: string; outcome: Outcome; ctx: EvalContext; now: Date }) {
  const { permitId, outcome: o, ctx, now } = decided;
  const ttl = o.decision === 'allow' ? (opts.ttlSeconds ?? DEFAULT_ALLOW_TTL_SECONDS) : o.decision === 'review' ? (opts.ttlSeconds ?? DEFAULT_REVIEW_TTL_SECONDS) : null;
  const expiresAt = ttl !== null ? new Date(now.getTime() + ttl * 1000) : null;
  const decision = decisionFromOutcome(o, permitId, { evaluatedAt: now, expiresAt, extraMeta: { ...(opts.decisionMetadata ?? {}), policy_version: ctx.policyVersion } });
  const allow = o.decision === 'allow';
  // An allow under a checked output ceiling reserves its worst case (hard caps), else the estimate.
  const outputTokens = (allow && o.reservation?.outputTokens) || req.estimatedOutputTokens;
  const estimatedCost = allow && o.reservation ? o.reservation.costMicros : req.estimatedCostMicros;
  const cost = allow ? (estimatedCost ?? 0) : 0;
  const periodKeys = PERIOD_KINDS.map((k) => ({ kind: k, start: ctx.periods[k].start }));
  const tokens = req.estimatedInputTokens + outputTokens;
  const row: NewPermit = {
    id: permitId,
    project_id: req.projectId,
    request_id: req.requestId,
    route: req.route,
    operation: req.operation,
    provider: req.provider,
    model: req.model,
    workflow_id: req.workflowId ?? null,
    decision: o.decision,
    reason_code: o.code,
    display_reason: o.reason,
    decision_details: decision.decision_details,
    actions: decision.actions,
    estimated_input_tokens: req.estimatedInputTokens,
    estimated_output_tokens: outputTokens,
    estimated_cost_micros: estimatedCost,
    reservation_state: allow ? 'active' : 'none',
    // The periods of issued_at (tollgate_permit_periods): not stored.
    reservation_periods: [],
    reserved_cost_micros: cost,
    issued_at: now,
    expires_at: expiresAt,
    parent_permit_id: opts.parentPermitId ?? null,
    idempotency_key: opts.idempotencyKey ?? null,
    metadata: { ...(opts.permitMetadata ?? {}), request_metadata: req.metadata ?? {}, ...(req.tools?.length ? { tools: req.tools } : {}), decision_metadata: decision.metadata },
  };
  const rateItems = ctx.policy.rate_limits.map((rl) => ({ limitId: rl.id, windowSeconds: rl.window_seconds, amount: rl.metric === 'requests' ? 1 : tokens }));
  let events = permitEvents(req, { id: permitId, expires_at: expiresAt }, o, now);
  if (allow && opts.onAllow) {
    row.closing = opts.onAllow.closing;
    row.dispatch_deadline = opts.onAllow.deadline;
    events = events.filter((e) => !DERIVED_PERMIT_EVENTS.has(e.eventType));
  } else if (allow && opts.derivePermitEvents) {
    events = events.filter((e) => !DERIVED_PERMIT_EVENTS.has(e.eventType));
  }
  return { decision, row, cost, periodKeys, rateItems, events };
}
