/**
 * One process's lease on one intent (docs/decisions/call-leases.md) and the rules that
 * decide, from its state alone, when a call can be taken from it locally, when it is renewed and
 * how large a block it asks for, and when it is returned. The requests themselves are sent by
 * src/intents/reservations.ts.
 */
import { randomBytes } from 'node:crypto';
import { LEASE_LATE_RETURN_MS } from '../../workflows/intent-messages';
import type { ReservationOutcome } from './reservation-outcome';

export interface Waiter {
  resolve(o: ReservationOutcome): void;
  reject(err: unknown): void;
}

/** A lease returned by this process or closed by the workflow, kept a while for calls given back late. */
export interface PastLease {
  leaseId: string;
  /** Calls used on it (final). */
  used: number;
  /** Of `used`, calls given back after the workflow was told of them. */
  returned: number;
  /** Of `returned`, those the workflow has been told of (or a report of them failed). */
  toldReturned: number;
  /** performance.now() when it was returned. */
  closedAt: number;
}

/** This process's lease on one intent and the callers waiting for calls. */
export interface LeaseLane {
  key: string;
  projectId: string;
  workflowId: string;
  leaseId: string;
  /** The workflow holds the lease open (a request for it was answered open). */
  open: boolean;
  size: number;
  used: number;
  /** performance.now() after which no call is taken from the lease. */
  deadline: number;
  revoked: boolean;
  /** The request returning the lease is in flight: its counts are final. */
  releasing: boolean;
  queue: Waiter[];
  busy: boolean;
  lastUse: number;
  lastSentAt: number;
  /** Calls used that the workflow has been told of, or is being told of by an Update in flight. */
  reported: number;
  /** Of `used`, calls given back after they were reported (the next request tells the workflow). */
  returned: number;
  /** Of `returned`, those the workflow has been told of, or is being told of by an Update in flight. */
  reportedReturned: number;
  /** Calls taken on this intent (all leases) and the time of the last rate sample. */
  consumedTotal: number;
  sampleAt: number;
  sampleConsumed: number;
  /** Calls per second (moving average), sizes the blocks asked for. */
  rate: number;
  /** Calls granted by the last request that granted any (doubled while callers run dry). */
  lastGrant: number;
  /** performance.now() before which no renewal is sent to grow the lease (the last one granted nothing). */
  quietUntil: number;
  /** Leases returned lately (oldest first), for calls given back after the return. */
  past: PastLease[];
}

/** A lease's block covers this much of the holder's recent rate. */
const BLOCK_SECONDS = 2;
const MIN_BLOCK = 4;
export const MAX_BLOCK = 100_000;
/** Returned when no call was taken for this long (default of `idleMs`). */
export const IDLE_MS = 500;
/** Renewed (and extended) this long before its deadline while in use; consumption reported at least this often. */
const RENEW_BEFORE_DEADLINE_MS = 1_000;
export const REPORT_EVERY_MS = 1_000;
/** Returned leases a lane remembers at most. */
const MAX_PAST_LEASES = 8;

const newLeaseId = () => `lse_${randomBytes(12).toString('base64url')}`;

/** A lane with no lease yet. */
export function newLane(key: string, intent: { projectId: string; workflowId: string }, now: number): LeaseLane {
  return {
    key, projectId: intent.projectId, workflowId: intent.workflowId, leaseId: newLeaseId(), open: false, size: 0, used: 0, deadline: 0, revoked: false, releasing: false, queue: [], busy: false,
    lastUse: now, lastSentAt: now, reported: 0, returned: 0, reportedReturned: 0, consumedTotal: 0, sampleAt: now, sampleConsumed: 0, rate: 0, lastGrant: 0, quietUntil: 0, past: [],
  };
}

export function available(lane: LeaseLane, now: number): boolean {
  return lane.open && !lane.revoked && lane.used < lane.size && now < lane.deadline;
}

export function take(lane: LeaseLane, now: number): ReservationOutcome {
  lane.used++;
  lane.consumedTotal++;
  lane.lastUse = now;
  return { granted: true, lease: lane.leaseId };
}

/**
 * Gives back a call taken from the lease `leaseId` whose governance recorded nothing (it failed
 * before its permit), so the intent does not count a call that never happened. Not yet reported:
 * the lease takes it back (it can be taken again). Already reported: it is counted as returned and
 * the lease's next request (renewal or return) tells the workflow, which stops counting it; the
 * call goes back to the intent's room, not to this lease. A lease returned (or being returned)
 * counts it as returned too; a report of its own tells the workflow (`lateReport`).
 */
export function giveBack(lane: LeaseLane, leaseId: string): boolean {
  if (lane.leaseId !== leaseId || !lane.open) {
    const past = lane.past.find((p) => p.leaseId === leaseId);
    if (!past || past.returned >= past.used) return false;
    past.returned++;
    return true;
  }
  lane.consumedTotal--;
  if (lane.used > lane.reported) lane.used--;
  else if (lane.returned < lane.used) lane.returned++;
  else {
    lane.consumedTotal++;
    return false;
  }
  return true;
}

export function blockSize(lane: LeaseLane): number {
  return Math.max(MIN_BLOCK, Math.min(MAX_BLOCK, Math.ceil(lane.rate * BLOCK_SECONDS)));
}

export function wantsRenewal(lane: LeaseLane, now: number, idleMs: number): boolean {
  if (!lane.open || lane.revoked || lane.queue.length > 0) return false;
  const recentlyUsed = now - lane.lastUse < idleMs;
  if (!recentlyUsed) return false;
  // After a renewal that granted nothing (near the ceiling, or the intent's expiry capping the
  // deadline) the next one waits: callers running dry ask at once anyway.
  const growable = now >= lane.quietUntil;
  return (
    (growable && lane.size - lane.used <= Math.floor(blockSize(lane) / 2)) ||
    (growable && lane.deadline - now < RENEW_BEFORE_DEADLINE_MS) ||
    ((lane.used > lane.reported || lane.returned > lane.reportedReturned) && now - lane.lastSentAt >= REPORT_EVERY_MS)
  );
}

export function wantsRelease(lane: LeaseLane, now: number, p: { idleMs: number; closing: boolean }): boolean {
  if (!lane.open) return false;
  return lane.revoked || p.closing || now >= lane.deadline || (lane.queue.length === 0 && now - lane.lastUse >= p.idleMs);
}

/** A returned lease with calls given back that the workflow has not been told of. */
export function lateReport(lane: LeaseLane): PastLease | undefined {
  return lane.past.find((p) => p.returned > p.toldReturned);
}

/** Forgets returned leases past the window in which the workflow still un-counts their calls. */
export function prunePast(lane: LeaseLane, now: number): void {
  while (lane.past.length > 0 && now - lane.past[0].closedAt >= LEASE_LATE_RETURN_MS) lane.past.shift();
}

/** Forgets the lease (the next request opens a new one; one that was used is kept in `past`); the rate it measured stays. */
export function resetLease(lane: LeaseLane, now = performance.now()): void {
  if (lane.used > 0) {
    lane.past.push({ leaseId: lane.leaseId, used: lane.used, returned: lane.returned, toldReturned: lane.reportedReturned, closedAt: now });
    if (lane.past.length > MAX_PAST_LEASES) lane.past.shift();
  }
  lane.leaseId = newLeaseId();
  lane.open = false;
  lane.size = 0;
  lane.used = 0;
  lane.reported = 0;
  lane.returned = 0;
  lane.reportedReturned = 0;
  lane.revoked = false;
  lane.releasing = false;
  lane.deadline = 0;
  lane.quietUntil = 0;
}

/** Rate sample (calls/s over the time since the last request), smoothed. */
export function sampleRate(lane: LeaseLane, now: number): void {
  const dt = (now - lane.sampleAt) / 1000;
  if (dt >= 0.05) {
    const inst = (lane.consumedTotal - lane.sampleConsumed) / dt;
    lane.rate = lane.rate === 0 ? inst : 0.5 * lane.rate + 0.5 * inst;
    lane.sampleAt = now;
    lane.sampleConsumed = lane.consumedTotal;
  }
}
