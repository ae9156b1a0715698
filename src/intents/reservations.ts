import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { listenForNotices, type NoticeListener } from '../db/notice-listener';
import type { Client } from '@temporalio/client';
import type { Queryable } from '../db/pool';
import type { Logger } from '../logger';
import { findIntent } from '../db/repositories/intents';
import {
  LEASE_REVOKE_CHANNEL,
  LEASE_SETTLE_GRACE_MS,
  LeaseArgs,
  LeaseResult,
  intentTemporalWorkflowId,
  leaseCallsUpdate,
} from '../../workflows/intent-messages';
import {
  available, blockSize, giveBack, IDLE_MS, lateReport, MAX_BLOCK, newLane, prunePast, REPORT_EVERY_MS, resetLease, sampleRate, take, wantsRelease, wantsRenewal, type LeaseLane, type PastLease,
} from './lease-lane';
import type { ReservationOutcome } from './reservation-outcome';

export interface IntentReservationsOptions {
  client: Client;
  db: Queryable;
  logger?: Logger;
  /** LISTENs for revocations (amend, complete, expiry, reclaim near the ceiling) on this database. Without it a revoked lease is returned at its renewal or deadline. */
  databaseUrl?: string;
  /** Identifies this process in the workflow's lease table (diagnostics). */
  holder?: string;
  /** A lease is returned after this long without a call (default 500 ms; tests that need leases to stay out raise it). */
  idleMs?: number;
}

const TICK_MS = 100;
const CLOSE_TIMEOUT_MS = 5_000;

/**
 * Call reservations against intents for one API process.
 *
 * Calls are taken from leases (docs/decisions/call-leases.md): the intent workflow — the only authority on max_calls — grants this
 * process a lease, a block of calls sized from the process's recent rate for the intent (only the
 * calls it is waiting for near the ceiling). Calls are taken from the lease locally without a
 * round trip; the lease is renewed in the background before it runs out, reports what was used,
 * and is returned when idle, at shutdown, at its deadline or when the workflow revokes it
 * (announced on PostgreSQL). At most one Update per intent is in flight from this process; callers
 * arriving while none is left wait for it and are served first come, first served.
 *
 * The lane's state and the rules over it (when to take locally, renew, return) are
 * src/intents/lease-lane.ts; this class sends the requests and serves the waiting callers.
 */
export class IntentReservations {
  private readonly leaseLanes = new Map<string, LeaseLane>();
  private readonly idleMs: number;
  readonly holder: string;
  private tick: NodeJS.Timeout | null = null;
  private listener: NoticeListener | null = null;
  private closing = false;
  /** Updates sent so far (for tests and the benchmark). */
  updatesSent = 0;
  /** Round-trip times of the Updates sent (ms, most recent first-in; the benchmark reads them). */
  readonly updateMs: number[] = [];
  /** Reservations that had to wait for an Update (the rest were taken locally). */
  waited = 0;
  /** The revocation listener is up (tests). */
  get listening(): boolean {
    return this.listener?.listening ?? false;
  }

  constructor(private readonly opts: IntentReservationsOptions) {
    this.idleMs = opts.idleMs ?? IDLE_MS;
    this.holder = (opts.holder ?? `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`).slice(0, 120);
    if (opts.databaseUrl) {
      this.listener = listenForNotices({
        databaseUrl: opts.databaseUrl,
        channel: LEASE_REVOKE_CHANNEL,
        onNotice: (payload) => this.onRevoked(payload),
        logger: opts.logger,
        lostMessage: 'intent lease revocation listener lost; revoked leases are returned at their renewal or deadline until it is back',
      });
    }
  }

  reserveCall(projectId: string, workflowId: string): Promise<ReservationOutcome> {
    return this.reserveLeased(projectId, workflowId);
  }

  /**
   * A call taken with `reserveCall` that governance never recorded (it failed before its permit):
   * returned to its lease, or, when the workflow was already told of it, reported as returned by
   * the lease's next request, or by a report of its own once the lease was returned. Returns
   * whether it was (false for a lease unknown here or returned longer ago than the workflow
   * remembers it).
   */
  giveBack(projectId: string, workflowId: string, lease: string): boolean {
    const lane = this.leaseLanes.get(intentTemporalWorkflowId(projectId, workflowId));
    if (!lane || !giveBack(lane, lease)) return false;
    if (lateReport(lane)) this.kick(lane);
    return true;
  }

  /** Returns every lease (what was used is reported) and stops listening. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.tick) clearInterval(this.tick);
    this.tick = null;
    await this.listener?.close();
    const pending = [...this.leaseLanes.values()].filter((lane) => lane.open || lane.busy || lateReport(lane));
    pending.forEach((lane) => this.kick(lane));
    const deadline = Date.now() + CLOSE_TIMEOUT_MS;
    while (Date.now() < deadline && [...this.leaseLanes.values()].some((lane) => lane.open || lane.busy)) {
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Open leases of this process (tests and diagnostics). */
  leases(): Array<{ workflowId: string; leaseId: string; size: number; used: number }> {
    return [...this.leaseLanes.values()].filter((l) => l.open).map((l) => ({ workflowId: l.workflowId, leaseId: l.leaseId, size: l.size, used: l.used }));
  }

  private reserveLeased(projectId: string, workflowId: string): Promise<ReservationOutcome> {
    const key = intentTemporalWorkflowId(projectId, workflowId);
    let lane = this.leaseLanes.get(key);
    if (!lane) {
      lane = newLane(key, { projectId, workflowId }, performance.now());
      this.leaseLanes.set(key, lane);
      this.ensureTick();
    }
    const now = performance.now();
    if (lane.queue.length === 0 && available(lane, now)) {
      const outcome = take(lane, now);
      if (this.wantsRenewal(lane, now)) this.kick(lane);
      return Promise.resolve(outcome);
    }
    const l = lane;
    this.waited++;
    const promise = new Promise<ReservationOutcome>((resolve, reject) => l.queue.push({ resolve, reject }));
    this.kick(lane);
    return promise;
  }

  private wantsRenewal(lane: LeaseLane, now: number): boolean {
    return wantsRenewal(lane, now, this.idleMs);
  }

  private wantsRelease(lane: LeaseLane, now: number): boolean {
    return wantsRelease(lane, now, { idleMs: this.idleMs, closing: this.closing });
  }

  private kick(lane: LeaseLane): void {
    if (lane.busy) return;
    lane.busy = true;
    void this.pump(lane);
  }

  private ensureTick(): void {
    if (this.tick || this.closing) return;
    this.tick = setInterval(() => {
      const now = performance.now();
      for (const lane of this.leaseLanes.values()) {
        if (lane.busy) continue;
        prunePast(lane, now);
        if (this.wantsRelease(lane, now) || this.wantsRenewal(lane, now) || lane.queue.length > 0 || lateReport(lane)) this.kick(lane);
        else if (!lane.open && lane.queue.length === 0 && lane.past.length === 0) this.leaseLanes.delete(lane.key);
      }
      if (this.leaseLanes.size === 0 && this.tick) {
        clearInterval(this.tick);
        this.tick = null;
      }
    }, TICK_MS);
    this.tick.unref?.();
  }

  private serveQueue(lane: LeaseLane): void {
    const now = performance.now();
    while (lane.queue.length > 0 && available(lane, now)) lane.queue.shift()!.resolve(take(lane, now));
  }

  private async pump(lane: LeaseLane): Promise<void> {
    try {
      for (;;) {
        // One macrotask turn first, so callers arriving in the same tick share this Update.
        await new Promise<void>((resolve) => setImmediate(resolve));
        this.serveQueue(lane);
        const now = performance.now();
        if (this.wantsRelease(lane, now)) {
          await this.release(lane);
          continue;
        }
        const need = lane.queue.length;
        if (need === 0 && !this.wantsRenewal(lane, now)) {
          const late = lateReport(lane);
          if (!late) break;
          await this.reportLate(lane, late);
          continue;
        }
        const remaining = lane.open ? Math.max(0, lane.size - lane.used) : 0;
        // Callers ran dry: the rate outgrew the estimate (a ramp), so at least double the last block.
        const block = need > 0 ? Math.min(MAX_BLOCK, Math.max(blockSize(lane), 2 * lane.lastGrant)) : blockSize(lane);
        const want = Math.max(need, need + block - remaining);
        const wasOpen = lane.open;
        const sizeBefore = lane.size;
        let res: LeaseResult;
        try {
          res = await this.sendLease(lane, { need, want });
        } catch (err) {
          await this.fail(lane, err);
          break;
        }
        if (res.closed) {
          resetLease(lane);
          // A lease the workflow no longer has (settled after its deadline): start a new one.
          if (wasOpen) continue;
          // Nothing granted to a new lease: the ceiling (or the intent is no longer active).
          this.denyQueue(lane, res);
          continue;
        }
        lane.open = true;
        if (res.size > sizeBefore) lane.lastGrant = res.size - sizeBefore;
        else if (need === 0) lane.quietUntil = performance.now() + REPORT_EVERY_MS;
        if (res.revoked) lane.revoked = true;
        this.serveQueue(lane);
        // Refused only when the request asked for waiting callers and the workflow, after taking
        // back every unused leased call, had none: consumed calls leave no room under max_calls.
        // Callers that arrived while a renewal (need 0) was in flight are asked for next round.
        if (need > 0 && lane.queue.length > 0 && !lane.revoked && res.size === sizeBefore) this.denyQueue(lane, res);
      }
    } finally {
      lane.busy = false;
      if (!lane.open && lane.queue.length === 0 && this.closing) this.leaseLanes.delete(lane.key);
    }
  }

  private denyQueue(lane: LeaseLane, res: Pick<LeaseResult, 'status'>): void {
    const outcome: ReservationOutcome = { granted: false, reason: res.status === 'active' ? 'ceiling_reached' : 'not_active' };
    for (const w of lane.queue.splice(0)) w.resolve(outcome);
  }

  private async release(lane: LeaseLane): Promise<void> {
    // No call is taken from it from here on (revoked covers the time the Update is in flight).
    lane.revoked = true;
    lane.releasing = true;
    try {
      await this.sendLease(lane, { need: 0, want: 0, release: true });
    } catch (err) {
      lane.releasing = false;
      // Retried (what was used must reach the workflow) until the workflow would have settled it
      // from permit records anyway, after its deadline.
      if (performance.now() < lane.deadline + LEASE_SETTLE_GRACE_MS + CLOSE_TIMEOUT_MS) {
        this.opts.logger?.warn({ err, workflow_id: lane.workflowId, lease: lane.leaseId }, 'intent lease release failed; retrying');
        await new Promise((r) => setTimeout(r, 200));
        return;
      }
      this.opts.logger?.warn({ err, workflow_id: lane.workflowId, lease: lane.leaseId }, 'intent lease release failed; the workflow settles it from permit records');
    }
    resetLease(lane);
  }

  /** Calls given back after their lease was returned: the workflow un-counts them (one Update per lease, cumulative). */
  private async reportLate(lane: LeaseLane, past: PastLease): Promise<void> {
    const { used, returned } = past;
    try {
      await this.sendUpdate(lane.key, leaseCallsUpdate, { leaseId: past.leaseId, holder: this.holder, used, returned, need: 0, want: 0, release: true });
    } catch (err) {
      // Not retried: the calls stay counted (one call more than was governed, never past max_calls).
      this.opts.logger?.warn({ err, workflow_id: lane.workflowId, lease: past.leaseId }, 'intent lease: calls given back after its return could not be reported');
    }
    past.toldReturned = Math.max(past.toldReturned, returned);
  }

  private async sendLease(lane: LeaseLane, a: { need: number; want: number; release?: boolean }): Promise<LeaseResult> {
    const sentAt = performance.now();
    sampleRate(lane, sentAt);
    const { used, returned } = lane;
    const args: LeaseArgs = {
      leaseId: lane.leaseId, holder: this.holder, used, need: a.need, want: a.want, ...(returned > 0 ? { returned } : {}), ...(a.release ? { release: true } : {}),
    };
    // Counted as told from the moment the Update leaves: a call given back meanwhile is then given
    // back as returned, told by the next request. A failed Update is told again with the next one,
    // or the release.
    const before = { reported: lane.reported, returned: lane.reportedReturned };
    lane.reported = Math.max(lane.reported, used);
    lane.reportedReturned = Math.max(lane.reportedReturned, returned);
    let res: LeaseResult;
    try {
      res = await this.sendUpdate(lane.key, leaseCallsUpdate, args);
    } catch (err) {
      if (lane.leaseId === args.leaseId) {
        lane.reported = before.reported;
        lane.reportedReturned = before.returned;
      }
      throw err;
    }
    lane.lastSentAt = sentAt;
    if (!res.closed) {
      lane.size = Math.max(lane.size, res.size);
      // Measured from before the request was sent: never later than the workflow's deadline.
      lane.deadline = sentAt + res.validForMs;
    }
    return res;
  }

  private async fail(lane: LeaseLane, err: unknown): Promise<void> {
    const outcome = await this.denialFromRow(lane.projectId, lane.workflowId);
    const waiters = lane.queue.splice(0);
    if (outcome) {
      resetLease(lane);
      waiters.forEach((w) => w.resolve(outcome));
    } else {
      this.opts.logger?.warn({ err, workflow_id: lane.workflowId }, 'intent lease request failed');
      waiters.forEach((w) => w.reject(err));
    }
  }

  private async denialFromRow(projectId: string, workflowId: string): Promise<ReservationOutcome | null> {
    try {
      const row = await findIntent(this.opts.db, projectId, workflowId);
      if (!row) return { granted: false, reason: 'unknown' };
      if (row.status !== 'active') return { granted: false, reason: 'not_active' };
    } catch {
      /* fall through to the original error */
    }
    return null;
  }

  private onRevoked(payload: string): void {
    const [key, ids] = payload.split(' ');
    const lane = this.leaseLanes.get(key);
    if (!lane || !ids) return;
    if (ids.split(',').includes(lane.leaseId) && lane.open) {
      lane.revoked = true;
      this.kick(lane);
    }
  }

  /** One Update; retried briefly when it lands while a run is continuing as new. */
  private async sendUpdate<R, A>(temporalWorkflowId: string, def: import('@temporalio/client').UpdateDefinition<R, [A]>, arg: A): Promise<R> {
    const handle = this.opts.client.workflow.getHandle(temporalWorkflowId);
    for (let attempt = 1; ; attempt++) {
      this.updatesSent++;
      const t0 = performance.now();
      try {
        const r = await handle.executeUpdate(def, { args: [arg] });
        if (this.updateMs.length < 100_000) this.updateMs.push(performance.now() - t0);
        return r;
      } catch (err) {
        const name = (err as Error)?.name ?? '';
        // A closed workflow or a missing one is final; anything else (e.g. the run closed by
        // continue-as-new between admission and acceptance) is retried a few times.
        if (attempt >= 5 || name === 'WorkflowNotFoundError' || name === 'WorkflowUpdateFailedError') throw err;
        try {
          const desc = await handle.describe();
          if (desc.status.name !== 'RUNNING') throw err;
        } catch {
          throw err;
        }
        await new Promise((r) => setTimeout(r, 10 * attempt));
      }
    }
  }
}

export function createIntentReservations(opts: IntentReservationsOptions): IntentReservations {
  return new IntentReservations(opts);
}
