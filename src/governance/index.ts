/**
 * The governance engine: evaluation (policy, budget, rate, firewall) → permit record, spend
 * reservations and their settlement, and the permit events. What a decision reads is loaded by
 * context.ts, what it writes and answers is shaped by decision-record.ts, the rules are in evaluate.ts.
 *
 * Concurrency: every persisted decision, settlement, release and expiry of a project runs in one
 * transaction holding `pg_advisory_xact_lock(GOVERNANCE_LOCK_CLASS, hashtext(project_id))`, so
 * "read counters → decide → reserve/consume" is atomic across every process and pool sharing the
 * database. Spend can therefore never be reserved past a cap, nor a quota or rate limit overrun.
 */
import type { PoolClient } from 'pg';
import type { Clock } from '../clock';
import { Db, withTransaction } from '../db/pool';
import { newId } from '../ids';
import { appendEvents } from '../db/repositories/events';
import { batchEvents } from '../events/batch';
import { findPermit, findPermitForUpdate, findPermitProjectId, insertPermit, listExpiredActivePermitIds, markPermitRevoked, PermitRecord } from '../db/repositories/permits';
import { lockProjectGovernance } from '../db/repositories/policies';
import { addToSpend, consumeRates, purgeRateEvents, releasePermitSpend, settlePermitSpend } from '../db/repositories/spend';
import { createProjectBatcher } from '../pipeline/batcher';
import { governCalls, type GovernCallResult } from '../db/repositories/governed-calls';
import { allowBounds, decide } from './evaluate';
import type { EvalContext } from './eval-context';
import type { GovernanceRequest, PermitDecision } from './types';
import { prepareInspection } from './firewall';
import { inSpan, inSpanSync } from '../telemetry/tracing';
import { decisionFromOutcome, decisionFromPermit, permitWrite, type EvaluateOptions } from './decision-record';
import { loadContext, loadPlanPolicy, predictedContext, type PlanPolicy } from './context';

export type { GovernanceRequest, PermitDecision, Decision, DecisionDetails } from './types';
export { policyDocumentSchema, defaultPolicyDocument, PLAN_QUOTAS, mergePatch } from './policy';
export type { PolicyDocument } from './policy';
export { inspectText } from './firewall';
export { monthlyBudgetSnapshot } from './budget-snapshot';
export { DEFAULT_ALLOW_TTL_SECONDS, DEFAULT_REVIEW_TTL_SECONDS, decisionFromOutcome, decisionFromPermit, type EvaluateOptions } from './decision-record';

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

const lockProject = lockProjectGovernance;


export function createGovernance(deps: { db: Db; clock: Clock }): Governance {
  const { db, clock } = deps;
  // Plan and policy per project as last read. Only the optimistic path uses them, and its reserve
  // statement re-checks both under the lock; the locked path reads them again and refreshes this.
  const planPolicies = new Map<string, PlanPolicy>();
  // Optimistic allows share one tollgate_govern_calls statement (locks and commit) per batch.
  const begins = createProjectBatcher<Record<string, unknown>, GovernCallResult>(db, governCalls);
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
    if (inspecting) await inSpan('governance.firewall', { 'tollgate.inspected_chars': req.inspectableText?.length ?? 0 }, () => inspecting);
    if (!opts.persist) {
      const now = clock.now();
      const ctx = await loadContext(db, req, now);
      const o = decide(ctx, req);
      return decisionFromOutcome(o, permitId, { evaluatedAt: now, expiresAt: null, extraMeta: { ...(opts.decisionMetadata ?? {}), dry_run: true, policy_version: ctx.policyVersion } });
    }
    // Optimistic path: decide without locking, then apply an allow with one statement that takes
    // the lock, re-checks plan, policy version and every counter against the allow's bounds and
    // writes everything (permit with its in-flight marker, reservation, rate windows, events), so no lock is
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
    const snap = contended ? await loadContext(db, req, snapNow, known) : predictedContext(snapNow, known);
    const snapOutcome = inSpanSync('governance.decide', { 'tollgate.policy_version': snap.policyVersion }, () => decide(snap, req));
    const bounds = snapOutcome.decision === 'allow' ? allowBounds(snap, req, snapOutcome) : null;
    if (bounds) {
      const w = permitWrite(req, opts, { permitId, outcome: snapOutcome, ctx: snap, now: snapNow });
      const r = await inSpan('governance.permit', { 'tollgate.path': 'optimistic' }, () => begins.submit(req.projectId, {
        project: req.projectId,
        plan: snap.plan,
        policy_version: snap.policyVersion,
        permit: w.row,
        spend: w.periodKeys.map((k) => ({ ...k, max_total: bounds.spendTotal[k.kind] })),
        quota_max: bounds.monthRequests,
        cost: w.cost,
        rates: bounds.rates.map(({ rl, amount, maxUsed }) => ({
          limit_id: rl.id, window_seconds: rl.window_seconds, amount, max_used: maxUsed,
        })),
        ...batchEvents(w.events),
      }));
      if (r === 'applied') return w.decision;
      if (r === 'exists') return decisionFromPermit((await findPermit(db, req.projectId, permitId))!);
      planPolicies.delete(req.projectId);
      staleUntil.set(req.projectId, snapNow.getTime() + 1000);
      if (staleUntil.size > 10_000) staleUntil.clear();
    }
    return inSpan('governance.permit', { 'tollgate.path': 'locked' }, () => withTransaction(db, async (c: PoolClient) => {
      await lockProject(c, req.projectId);
      if (opts.permitId) {
        const existing = await findPermit(c, req.projectId, opts.permitId);
        if (existing) return decisionFromPermit(existing);
      }
      // Read the clock after the lock: a decision is evaluated at the moment it can be applied.
      const now = clock.now();
      const ctx = await loadContext(c, req, now);
      remember(req.projectId, ctx);
      const o = decide(ctx, req);
      const w = permitWrite(req, opts, { permitId, outcome: o, ctx, now });
      await insertPermit(c, w.row);
      if (o.decision === 'allow') {
        await addToSpend(c, req.projectId, w.periodKeys, { reserved: w.cost, requests: 1 });
        await consumeRates(c, req.projectId, w.rateItems);
      }
      await appendEvents(c, w.events);
      return w.decision;
    }));
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

  async function release(permitId: string, reason: string): Promise<void> {
    await releasePermitSpend(db, permitId, { state: 'released', reason, at: clock.now() });
  }

  async function expireStaleReservations(now: Date = clock.now(), opts: { projectId?: string } = {}): Promise<number> {
    let count = 0;
    for (;;) {
      const ids = await listExpiredActivePermitIds(db, now, { projectId: opts.projectId, limit: 500 });
      if (ids.length === 0) break;
      for (const id of ids) {
        const done = await withLockedPermit(id, async (c, p) => {
          if (!p.expires_at || new Date(p.expires_at) > now) return false;
          const ok = await releasePermitSpend(c, p.id, { state: 'expired', reason: 'permit_expired', at: now });
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
    if (!opts.projectId) await purgeRateEvents(db);
    return count;
  }

  async function revoke(projectId: string, permitId: string, input: { revokedBy: string; reason: string }): Promise<PermitRecord | null> {
    const existing = await findPermit(db, projectId, permitId);
    if (!existing) return null;
    return withLockedPermit(permitId, async (c, p) => {
      if (p.revoked_at) return null;
      const now = clock.now();
      await releasePermitSpend(c, p.id, { state: 'released', reason: 'permit_revoked', at: now });
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
