import { ApplicationFailure, condition, patched } from '@temporalio/workflow';
import type { IntentActivities } from '../activities/intents';
import { INTENT_FAILURES, IntentState, LEASE_LATE_RETURN_MS, LEASE_SETTLE_GRACE_MS, LEASE_TTL_MS, LeaseArgs, LeaseResult } from './intent-messages';

/**
 * Marks runs whose lease requests reclaim every unused call before refusing (the requester's own
 * unseen block, repeated rounds): docs/decisions/call-leases.md.
 */
const LEASE_RECLAIM_PATCH = 'intent-lease-reclaim-all';
/**
 * Marks runs that subtract the calls a holder gave back after reporting them (LeaseArgs.returned).
 * A run that handled such reports before this code ignored them; replaying it must ignore them too.
 */
const LEASE_RETURNED_PATCH = 'intent-lease-returned-calls';
/**
 * Marks runs that un-count calls given back after their lease closed (a report naming a closed
 * lease) and settle a lease holding returned calls from its permits plus those calls (they wrote
 * none). Runs that met either before this code kept the count; replaying them must keep it too.
 */
const LEASE_LATE_RETURN_PATCH = 'intent-lease-late-returns';
/** Closed leases remembered at most (the most recent), whatever their age. */
const MAX_CLOSED_LEASES = 128;
/** Largest block one lease request is granted beyond the calls its holder is waiting for. */
const MAX_LEASE_PREFETCH = 100_000;

type LeaseActivities = Pick<IntentActivities, 'notifyLeaseHolders' | 'countLeasePermits'>;

/**
 * The call leases of one intentWorkflow run (workflow code: deterministic, runs in the workflow
 * sandbox). Invariant: calls committed = consumed (reported, less those given back) + the unconsumed
 * part of every open lease ≤ maxCalls.
 */
export function createLeaseBook(state: IntentState, acts: LeaseActivities) {
  const leases = state.leases!;
  const closed = (state.closedLeases ??= {});
  let epoch = 0;
  const settling = new Set<string>();
  const committed = () => {
    let c = state.actualCalls;
    for (const l of Object.values(leases)) c += l.size - l.used;
    return c;
  };
  const room = () => (state.maxCalls === null ? Number.POSITIVE_INFINITY : Math.max(0, state.maxCalls - committed()));
  /**
   * A holder's cumulative counts (a retried or reordered report changes nothing): calls used count,
   * calls given back after being reported (at most what was used) stop counting.
   */
  const report = (id: string, used: number, returned = 0) => {
    const l = leases[id];
    if (!l) return;
    const u = Math.min(l.size, Math.max(l.used, used));
    state.actualCalls += u - l.used;
    l.used = u;
    const before = l.returned ?? 0;
    const r = Math.min(l.used, Math.max(before, returned));
    // Checked only when a report brings a give-back, so histories without any replay unchanged.
    if (r > before && patched(LEASE_RETURNED_PATCH)) {
      state.actualCalls -= r - before;
      l.returned = r;
    }
  };
  /**
   * A report naming a lease closed lately: its count comes down to what the holder used less what it
   * gave back (the larger of the holder's and the workflow's `used`, so a stale report lowers
   * nothing), never up (a call the settlement missed stays uncounted, as before).
   */
  const reportClosed = (id: string, used: number, returned = 0) => {
    const c = closed[id];
    if (!c) return;
    const counted = Math.min(c.counted, Math.max(0, Math.max(c.used, used) - returned));
    // Checked only when a report lowers the count, so histories without any replay unchanged.
    if (counted < c.counted && patched(LEASE_LATE_RETURN_PATCH)) {
      state.actualCalls -= c.counted - counted;
      c.counted = counted;
    }
  };
  const close = (id: string) => {
    const l = leases[id];
    if (!l) return;
    delete leases[id];
    const now = Date.now();
    closed[id] = { used: l.used, counted: l.used - (l.returned ?? 0), closedAtMs: now };
    // Oldest first (insertion order): drop those past the late-return window or beyond the cap.
    const ids = Object.keys(closed);
    for (let i = 0; i < ids.length && (ids.length - i > MAX_CLOSED_LEASES || closed[ids[i]].closedAtMs + LEASE_LATE_RETURN_MS <= now); i++) delete closed[ids[i]];
  };
  const validFor = () => {
    const toExpiry = state.expiresAtMs === null ? LEASE_TTL_MS : state.expiresAtMs - Date.now();
    return Math.max(0, Math.min(LEASE_TTL_MS, toExpiry));
  };
  const leaseResult = (id: string, extra: Partial<LeaseResult> = {}): LeaseResult => {
    const l = leases[id];
    return {
      size: l?.size ?? 0,
      validForMs: l ? Math.max(0, l.deadlineMs - Date.now()) : 0,
      closed: !l,
      revoked: l?.revoking ?? false,
      status: state.status,
      actualCalls: state.actualCalls,
      maxCalls: state.maxCalls,
      ...extra,
    };
  };

  /** Leases whose holder did not return them: consumed = allowed permits carrying the lease id. */
  const settle = async (ids: string[]) => {
    const toSettle = ids.filter((id) => leases[id] && !settling.has(id));
    // Leases another handler (or the main loop) is settling right now: wait for that to finish.
    const elsewhere = ids.filter((id) => settling.has(id));
    if (toSettle.length === 0) {
      if (elsewhere.length > 0) await condition(() => elsewhere.every((id) => !settling.has(id)));
      return;
    }
    toSettle.forEach((id) => settling.add(id));
    try {
      const counts = await acts.countLeasePermits({ projectId: state.projectId, workflowId: state.workflowId, leaseIds: toSettle });
      for (const id of toSettle) {
        const l = leases[id];
        if (!l) continue;
        // Calls given back after being reported wrote no permit: the lease counts its permits plus
        // those (never less than its holder reported).
        const given = l.returned ?? 0;
        const permits = counts[id] ?? 0;
        report(id, given > 0 && patched(LEASE_LATE_RETURN_PATCH) ? permits + given : permits);
        close(id);
      }
    } finally {
      toSettle.forEach((id) => settling.delete(id));
      epoch++;
    }
    if (elsewhere.length > 0) await condition(() => elsewhere.every((id) => !settling.has(id)));
  };

  /**
   * Asks the holders of `ids` to return their leases (announced on PostgreSQL, so a live holder
   * stops consuming within milliseconds) and waits until they did, or until the leases' deadlines
   * plus the settlement grace passed (a dead holder), then settles what is left from permits.
   */
  const revokeAndWait = async (ids: string[], self?: string) => {
    const open = ids.filter((id) => leases[id]);
    if (open.length === 0) return;
    open.forEach((id) => (leases[id].revoking = true));
    await acts.notifyLeaseHolders({ projectId: state.projectId, workflowId: state.workflowId, leaseIds: open });
    const lastSettle = Math.max(...open.map((id) => leases[id]?.deadlineMs ?? 0)) + LEASE_SETTLE_GRACE_MS;
    const wait = lastSettle - Date.now();
    // A requester whose own lease is revoked meanwhile (two holders reclaiming from each other at
    // the ceiling) stops waiting: its holder can only return the lease once this Update answers.
    const selfRevoked = () => self !== undefined && !!leases[self]?.revoking;
    if (wait > 0) await condition(() => open.every((id) => !leases[id]) || selfRevoked(), wait);
    if (selfRevoked()) return;
    await settle(open.filter((id) => leases[id]));
  };

  /** Calls granted to a lease request: what the holder waits for first, a prefetch only while far from the ceiling. */
  const grantFor = (args: LeaseArgs): number => {
    const r = room();
    if (r <= 0) return 0;
    const others = Object.entries(leases).filter(([id, l]) => id !== args.leaseId && !l.revoking).length;
    // Half the room divided among holders: blocks shrink geometrically towards the ceiling, where
    // only the calls a holder is waiting for are granted (one by one for a single caller).
    const share = Math.floor(r / (2 * (others + 1)));
    return Math.min(r, Math.max(args.need, Math.min(args.want, share, MAX_LEASE_PREFETCH)));
  };

  /**
   * No room for a requester's waiting callers: every other lease holding unused calls (live,
   * expired-but-unreturned, or an earlier lease of the same process) is revoked and waited for,
   * again while leases granted meanwhile hold unused calls, for at most one lease validity plus
   * the settlement grace. Returns the grant then (0: consumed calls leave no room), or null when
   * the intent stopped being active or the requester's own lease was revoked meanwhile.
   */
  const reclaimFor = async (args: LeaseArgs): Promise<number | null> => {
    const giveUpAt = Date.now() + LEASE_TTL_MS + LEASE_SETTLE_GRACE_MS;
    for (;;) {
      const reclaim = Object.entries(leases)
        .filter(([other, l]) => other !== args.leaseId && l.size > l.used)
        .map(([other]) => other);
      if (reclaim.length === 0) return 0;
      await revokeAndWait(reclaim, args.leaseId);
      if (state.status !== 'active' || leases[args.leaseId]?.revoking) return null;
      const grant = grantFor(args);
      if (grant > 0 || Date.now() >= giveUpAt) return grant;
    }
  };

  /** Answers one leaseCalls Update (the caller counts it as handled). */
  const request = async (args: LeaseArgs): Promise<LeaseResult> => {
    const id = args.leaseId;
    if (leases[id]) report(id, args.used, args.returned);
    else reportClosed(id, args.used, args.returned);
    if (args.release) {
      close(id);
      return leaseResult(id);
    }
    if (leases[id]?.revoking) return leaseResult(id);
    if (state.status !== 'active') {
      if (leases[id]) leases[id].revoking = true;
      return leaseResult(id);
    }
    // A lease this workflow no longer has (settled after its deadline): the holder starts a new one.
    if (!leases[id] && args.used > 0) return leaseResult(id);
    // Past the expiry (the main loop has not run yet): nothing more is granted.
    if (state.expiresAtMs !== null && Date.now() >= state.expiresAtMs) {
      if (leases[id]) leases[id].revoking = true;
      return leaseResult(id, { status: 'expired' });
    }
    // A holder with waiting callers has used all of its lease it knows of; a larger size here
    // is a grant whose answer it never saw (a failed round trip), which only it could use.
    const own = leases[id];
    if (args.need > 0 && own && own.size > own.used && patched(LEASE_RECLAIM_PATCH)) own.size = own.used;
    let grant = grantFor(args);
    if (grant === 0 && args.need > 0) {
      if (patched(LEASE_RECLAIM_PATCH)) {
        const reclaimed = await reclaimFor(args);
        if (reclaimed === null) return leaseResult(id, { revoked: !!leases[id] });
        grant = reclaimed;
      } else {
        // Runs that began with this single round keep it (replay).
        const reclaim = Object.entries(leases)
          .filter(([other, l]) => other !== id && l.size > l.used)
          .map(([other]) => other);
        if (reclaim.length > 0) {
          await revokeAndWait(reclaim, id);
          if (state.status !== 'active' || leases[id]?.revoking) return leaseResult(id, { revoked: !!leases[id] });
          grant = grantFor(args);
        }
      }
    }
    const l = leases[id];
    if (grant > 0 || l) {
      const deadlineMs = Date.now() + validFor();
      if (l) {
        l.size += grant;
        l.deadlineMs = deadlineMs;
      } else {
        leases[id] = { holder: args.holder, size: grant, used: 0, deadlineMs, revoking: false };
        epoch++;
      }
    }
    return leaseResult(id);
  };

  return {
    /** Changes when a lease opens or a settlement ends (the main loop recomputes its timers). */
    get epoch() {
      return epoch;
    },
    settling,
    committed,
    room,
    settle,
    revokeAndWait,
    request,
  };
}

export function validateLeaseArgs(args: LeaseArgs): void {
  const count = (n: unknown) => Number.isInteger(n) && (n as number) >= 0 && (n as number) <= 1_000_000_000;
  if (
    !args || typeof args.leaseId !== 'string' || args.leaseId.length < 1 || args.leaseId.length > 64 || typeof args.holder !== 'string' ||
    !count(args.used) || !count(args.need) || !count(args.want) || (args.returned !== undefined && !count(args.returned))
  ) {
    throw ApplicationFailure.create({ type: INTENT_FAILURES.invalid, message: 'leaseCalls needs a lease id, a holder and non-negative integer counts', nonRetryable: true });
  }
}
