/**
 * The governance engine: evaluation (policy, budget, rate, firewall) → permit record, spend
 * reservations and their settlement, and the permit events.
 *
 * Concurrency: every persisted decision, settlement, release and expiry of a project runs in one
 * transaction holding `pg_advisory_xact_lock(GOVERNANCE_LOCK_CLASS, hashtext(project_id))`, so
 * "read counters → decide → reserve/consume" is atomic across every process and pool sharing the
 * database. Spend can therefore never be reserved past a cap, nor a quota or rate limit overrun.
 */
import type { PoolClient } from 'pg';
import type { Clock } from '../clock';
import { Db, Queryable, withTransaction } from '../db/pool';
import { newId } from '../ids';
import { appendEvents, eventRows, NewEvent } from '../db/repositories/events';
import { inflightRow, insertInflightCall, type InflightCall } from '../db/repositories/inflight-calls';
import { findPermit, findPermitForUpdate, findPermitProjectId, insertPermit, listExpiredActivePermitIds, markPermitRevoked, NewPermit, PermitRecord } from '../db/repositories/permits';
import { getPolicy, lockProjectGovernance, StoredPolicy } from '../db/repositories/policies';
import { addToSpend, consumeRateWindows, purgeRateWindows, readRateWindows, readSpendRows, releasePermitSpend, settlePermitSpend } from '../db/repositories/spend';
import { findProjectPlan, type Plan } from '../db/repositories/projects';
import { createProjectBatcher } from '../pipeline/batcher';
import { beginCalls, type BeginResult } from '../db/repositories/governed-calls';
import { allowBounds, decide, EvalContext, Outcome, OUTCOME_LABEL } from './evaluate';
import { currentPeriods, PERIOD_KINDS, PeriodKind, previousDays, rateWindow } from './periods';
import type { GovernanceRequest, PermitDecision } from './types';
import { prepareInspection } from './firewall';

export type { GovernanceRequest, PermitDecision, Decision, DecisionDetails } from './types';
export { policyDocumentSchema, defaultPolicyDocument, PLAN_QUOTAS, mergePatch } from './policy';
export type { PolicyDocument } from './policy';
export { inspectText } from './firewall';
export { monthlyBudgetSnapshot } from './budget-snapshot';

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
   * Written in the same statement as an allow (and only with one): the governed-call pipeline's
   * dispatch-start events and in-flight row, so the allow path costs one round trip before dispatch.
   */
  onAllow?: { events: NewEvent[]; inflight: InflightCall };
}

export interface ActualUsage {
  costMicros: number;
  inputTokens: number;
  outputTokens: number;
}

export interface Governance {
  evaluate(req: GovernanceRequest, opts: EvaluateOptions): Promise<PermitDecision>;
  /** Converts the reservation to actual spend. Idempotent: a second settle has no effect. */
  settle(permitId: string, actual: ActualUsage): Promise<void>;
  /** Releases an unsettled reservation (failed or abandoned execution). Idempotent. */
  release(permitId: string, reason: string): Promise<void>;
  /**
   * Releases reservations whose permit expired (state `expired`, event `permit.expired`); returns the
   * count. All projects unless `opts.projectId` narrows it.
   */
  expireStaleReservations(now?: Date, opts?: { projectId?: string }): Promise<number>;
  /** Records revocation (event `permit.revoked`) and releases an active reservation. Null when absent or already revoked. */
  revoke(projectId: string, permitId: string, input: { revokedBy: string; reason: string }): Promise<PermitRecord | null>;
}

export function decisionFromOutcome(
  o: Outcome,
  permitId: string,
  evaluatedAt: Date,
  expiresAt: Date | null,
  extraMeta: Record<string, unknown> = {},
): PermitDecision {
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
      ...(o.firewall ? { firewall: { mode: o.firewall.mode, categories: o.firewall.categories } } : {}),
      ...extraMeta,
    },
    expires_at: expiresAt ? expiresAt.toISOString() : null,
  };
  if (o.retryAfterSeconds !== undefined) d.retry_after_seconds = o.retryAfterSeconds;
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
  return d;
}

const lockProject = lockProjectGovernance;

interface PlanPolicy {
  plan: Plan;
  policy: StoredPolicy;
}

async function loadPlanPolicy(q: Queryable, projectId: string): Promise<PlanPolicy> {
  const plan = await findProjectPlan(q, projectId);
  if (!plan) throw new Error(`project ${projectId} not found`);
  return { plan, policy: await getPolicy(q, projectId) };
}

/** A context without counters: what the optimistic path predicts with (the bounds re-check them). */
function predictedContext(now: Date, known: PlanPolicy): EvalContext {
  const periods = currentPeriods(now);
  const zero = { reserved: 0, settled: 0, requests: 0 };
  return {
    now, plan: known.plan, policy: known.policy.document, policyVersion: known.policy.version, periods,
    spend: { day: zero, week: zero, month: zero, quarter: zero }, previousDaysSpend: [], rateUsed: new Map(),
  };
}

/** Reads the counters the decision needs (plan and policy too unless given). */
async function loadContext(q: Queryable, projectId: string, now: Date, known?: PlanPolicy): Promise<EvalContext> {
  const { plan, policy } = known ?? (await loadPlanPolicy(q, projectId));
  const periods = currentPeriods(now);
  const baselineDays = policy.document.budgets.daily_spike?.baseline_days ?? 0;
  const prevDays = previousDays(now, baselineDays);
  const keys = [...PERIOD_KINDS.map((k) => ({ kind: k, start: periods[k].start })), ...prevDays.map((s) => ({ kind: 'day' as const, start: s }))];
  const [spendRows, rateUsed] = await Promise.all([
    readSpendRows(q, projectId, keys),
    readRateWindows(
      q,
      projectId,
      policy.document.rate_limits.map((rl) => ({ limitId: rl.id, windowSeconds: rl.window_seconds, windowStart: rateWindow(now, rl.window_seconds).start })),
    ),
  ]);
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
  return { now, plan, policy: policy.document, policyVersion: policy.version, periods, spend, previousDaysSpend, rateUsed };
}

function permitEvents(req: GovernanceRequest, p: Pick<PermitRecord, 'id' | 'expires_at'>, o: Outcome, at: Date): NewEvent[] {
  const base = { projectId: req.projectId, provider: req.provider, model: req.model, permitId: p.id, requestId: req.requestId, timestamp: at };
  const out: NewEvent[] = [];
  if (o.firewall?.mode === 'block') {
    // Category only: never the rule or the matched text.
    out.push({ ...base, eventType: 'firewall.blocked', source: 'firewall', phase: 'firewall', metadata: { category: o.firewall.categories[0], categories: o.firewall.categories } });
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
      ...(o.retryAfterSeconds !== undefined ? { retry_after_seconds: o.retryAfterSeconds } : {}),
      ...(o.decision === 'allow' ? { reserved_cost_usd_micros: req.estimatedCostMicros ?? 0 } : {}),
      ...(o.firewall?.mode === 'monitor' ? { firewall_monitor_categories: o.firewall.categories } : {}),
    },
  });
  if (p.expires_at) {
    out.push({ ...base, eventType: 'permit.expiry_scheduled', source: 'permits', phase: 'permit', metadata: { expires_at: new Date(p.expires_at).toISOString() } });
  }
  return out;
}

/** What persisting outcome `o` writes: the permit row, its reservation, rate consumption and events. */
function permitWrite(req: GovernanceRequest, opts: EvaluateOptions, permitId: string, o: Outcome, ctx: EvalContext, now: Date) {
  const ttl = o.decision === 'allow' ? (opts.ttlSeconds ?? DEFAULT_ALLOW_TTL_SECONDS) : o.decision === 'review' ? (opts.ttlSeconds ?? DEFAULT_REVIEW_TTL_SECONDS) : null;
  const expiresAt = ttl !== null ? new Date(now.getTime() + ttl * 1000) : null;
  const decision = decisionFromOutcome(o, permitId, now, expiresAt, { ...(opts.decisionMetadata ?? {}), policy_version: ctx.policyVersion });
  const allow = o.decision === 'allow';
  const cost = allow ? (req.estimatedCostMicros ?? 0) : 0;
  const periodKeys = PERIOD_KINDS.map((k) => ({ kind: k, start: ctx.periods[k].start }));
  const tokens = req.estimatedInputTokens + req.estimatedOutputTokens;
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
    estimated_output_tokens: req.estimatedOutputTokens,
    estimated_cost_micros: req.estimatedCostMicros,
    reservation_state: allow ? 'active' : 'none',
    reservation_periods: allow ? periodKeys : [],
    reserved_cost_micros: cost,
    issued_at: now,
    expires_at: expiresAt,
    parent_permit_id: opts.parentPermitId ?? null,
    idempotency_key: opts.idempotencyKey ?? null,
    metadata: { ...(opts.permitMetadata ?? {}), request_metadata: req.metadata ?? {}, decision_metadata: decision.metadata },
  };
  const rateItems = ctx.policy.rate_limits.map((rl) => ({
    limitId: rl.id,
    windowSeconds: rl.window_seconds,
    windowStart: rateWindow(now, rl.window_seconds).start,
    amount: rl.metric === 'requests' ? 1 : tokens,
  }));
  return { decision, row, cost, periodKeys, rateItems, events: permitEvents(req, { id: permitId, expires_at: expiresAt }, o, now) };
}

export function createGovernance(deps: { db: Db; clock: Clock }): Governance {
  const { db, clock } = deps;
  // Plan and policy per project as last read. Only the optimistic path uses them, and its reserve
  // statement re-checks both under the lock; the locked path reads them again and refreshes this.
  const planPolicies = new Map<string, PlanPolicy>();
  // Optimistic allows share one tollgate_begin_calls statement (locks and commit) per batch.
  const begins = createProjectBatcher<Record<string, unknown>, BeginResult>((items) => beginCalls(db, items));
  // Projects whose optimistic allow recently went stale: predict from a real snapshot for a while.
  const staleUntil = new Map<string, number>();
  const remember = (projectId: string, ctx: EvalContext) => {
    if (planPolicies.size > 10_000) planPolicies.clear();
    planPolicies.set(projectId, { plan: ctx.plan, policy: { project_id: projectId, version: ctx.policyVersion, document: ctx.policy, updated_at: null, updated_by: null } });
  };

  async function evaluate(req: GovernanceRequest, opts: EvaluateOptions): Promise<PermitDecision> {
    const permitId = opts.permitId ?? newId('permit');
    // Large texts are inspected in a worker thread first; decide() then reads that result (small
    // texts: nothing to wait for, decide() inspects them synchronously).
    const inspecting = req.inspectableText ? prepareInspection(req.inspectableText) : undefined;
    if (inspecting) await inspecting;
    if (!opts.persist) {
      const now = clock.now();
      const ctx = await loadContext(db, req.projectId, now);
      const o = decide(ctx, req);
      return decisionFromOutcome(o, permitId, now, null, { ...(opts.decisionMetadata ?? {}), dry_run: true, policy_version: ctx.policyVersion });
    }
    // Optimistic path: decide without locking, then apply an allow with one statement that takes
    // the lock, re-checks plan, policy version and every counter against the allow's bounds and
    // writes everything (permit, reservation, rate windows, events, in-flight row), so no lock is
    // held across a client round trip. Plan and policy come from the process cache (the statement
    // re-checks both). Counters are not read: every counter-dependent check is in the bounds, so
    // the prediction uses zeros, unless this project recently went stale (near a cap or a rate
    // limit), where a real snapshot avoids a wasted statement. Anything but an applied allow is
    // decided again under the lock.
    const snapNow = clock.now();
    let known = planPolicies.get(req.projectId);
    if (!known) {
      known = await loadPlanPolicy(db, req.projectId);
      planPolicies.set(req.projectId, known);
    }
    const contended = (staleUntil.get(req.projectId) ?? 0) > snapNow.getTime();
    const snap = contended ? await loadContext(db, req.projectId, snapNow, known) : predictedContext(snapNow, known);
    const snapOutcome = decide(snap, req);
    const bounds = snapOutcome.decision === 'allow' ? allowBounds(snap, req) : null;
    if (bounds) {
      const w = permitWrite(req, opts, permitId, snapOutcome, snap, snapNow);
      const r = await begins.submit(req.projectId, {
        project: req.projectId,
        plan: snap.plan,
        policy_version: snap.policyVersion,
        permit: w.row,
        spend: w.periodKeys.map((k) => ({ ...k, max_total: bounds.spendTotal[k.kind] })),
        quota_max: bounds.monthRequests,
        cost: w.cost,
        rates: bounds.rates.map(({ rl, amount, maxUsed }) => ({
          limit_id: rl.id, window_seconds: rl.window_seconds, window_start: rateWindow(snapNow, rl.window_seconds).start, amount, max_used: maxUsed,
        })),
        events: eventRows(req.projectId, opts.onAllow ? [...w.events, ...opts.onAllow.events] : w.events),
        inflight: opts.onAllow ? inflightRow(opts.onAllow.inflight) : null,
      });
      if (r === 'applied') return w.decision;
      if (r === 'exists') return decisionFromPermit((await findPermit(db, req.projectId, permitId))!);
      planPolicies.delete(req.projectId);
      staleUntil.set(req.projectId, snapNow.getTime() + 1000);
      if (staleUntil.size > 10_000) staleUntil.clear();
    }
    return withTransaction(db, async (c: PoolClient) => {
      await lockProject(c, req.projectId);
      if (opts.permitId) {
        const existing = await findPermit(c, req.projectId, opts.permitId);
        if (existing) return decisionFromPermit(existing);
      }
      // Read the clock after the lock: a decision is evaluated at the moment it can be applied.
      const now = clock.now();
      const ctx = await loadContext(c, req.projectId, now);
      remember(req.projectId, ctx);
      const o = decide(ctx, req);
      const w = permitWrite(req, opts, permitId, o, ctx, now);
      await insertPermit(c, w.row);
      if (o.decision === 'allow') {
        await addToSpend(c, req.projectId, w.periodKeys, { reserved: w.cost, requests: 1 });
        await consumeRateWindows(c, req.projectId, w.rateItems);
      }
      const allowExtras = o.decision === 'allow' ? opts.onAllow : undefined;
      await appendEvents(c, allowExtras ? [...w.events, ...allowExtras.events] : w.events);
      if (allowExtras) await insertInflightCall(c, allowExtras.inflight);
      return w.decision;
    });
  }

  /** Runs `fn` on the locked permit inside the project's governance lock. */
  async function withLockedPermit<T>(permitId: string, fn: (c: PoolClient, p: PermitRecord) => Promise<T>): Promise<T | null> {
    const projectId = await findPermitProjectId(db, permitId);
    if (!projectId) return null;
    return withTransaction(db, async (c) => {
      await lockProject(c, projectId);
      const p = await findPermitForUpdate(c, permitId);
      if (!p) return null;
      return fn(c, p);
    });
  }

  // Settle and release run as one statement each (migration 0090): the governance lock is held
  // only while PostgreSQL executes them.
  async function settle(permitId: string, actual: ActualUsage): Promise<void> {
    if (!Number.isInteger(actual.costMicros) || actual.costMicros < 0) throw new Error('settle: costMicros must be a non-negative integer');
    await settlePermitSpend(db, permitId, { ...actual, at: clock.now() });
  }

  async function releaseWith(c: Queryable, permitId: string, state: 'released' | 'expired', reason: string, at: Date): Promise<boolean> {
    return releasePermitSpend(c, permitId, state, reason, at);
  }

  async function release(permitId: string, reason: string): Promise<void> {
    await releaseWith(db, permitId, 'released', reason, clock.now());
  }

  async function expireStaleReservations(now: Date = clock.now(), opts: { projectId?: string } = {}): Promise<number> {
    let count = 0;
    for (;;) {
      const ids = await listExpiredActivePermitIds(db, now, { projectId: opts.projectId, limit: 500 });
      if (ids.length === 0) break;
      for (const id of ids) {
        const done = await withLockedPermit(id, async (c, p) => {
          if (!p.expires_at || new Date(p.expires_at) > now) return false;
          const ok = await releaseWith(c, p.id, 'expired', 'permit_expired', now);
          if (ok) {
            await appendEvents(c, [{
              projectId: p.project_id, eventType: 'permit.expired', source: 'permits', phase: 'permit', provider: p.provider, model: p.model,
              permitId: p.id, requestId: p.request_id, timestamp: now,
              metadata: { expires_at: new Date(p.expires_at).toISOString(), released_usd_micros: Number(p.reserved_cost_micros) },
            }]);
          }
          return ok;
        });
        if (done) count += 1;
      }
      if (ids.length < 500) break;
    }
    if (!opts.projectId) await purgeRateWindows(db, new Date(now.getTime() - 24 * 3600 * 1000));
    return count;
  }

  async function revoke(projectId: string, permitId: string, input: { revokedBy: string; reason: string }): Promise<PermitRecord | null> {
    const existing = await findPermit(db, projectId, permitId);
    if (!existing) return null;
    return withLockedPermit(permitId, async (c, p) => {
      if (p.revoked_at) return null;
      const now = clock.now();
      await releaseWith(c, p.id, 'released', 'permit_revoked', now);
      const revoked = await markPermitRevoked(c, p.id, { revokedBy: input.revokedBy, reason: input.reason, at: now });
      await appendEvents(c, [{
        projectId: p.project_id, eventType: 'permit.revoked', source: 'permits', phase: 'permit', provider: p.provider, model: p.model,
        permitId: p.id, requestId: p.request_id, timestamp: now, metadata: { revoked_by: input.revokedBy, reason: input.reason },
      }]);
      return revoked;
    });
  }

  return { evaluate, settle, release, expireStaleReservations, revoke };
}
