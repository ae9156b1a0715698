import { giveBack, lateReport, newLane, prunePast, resetLease, take } from '../../../src/intents/lease-lane';
import { LEASE_LATE_RETURN_MS } from '../../../workflows/intent-messages';

/** A lane holding an open lease of `size` calls (as a granted request leaves it). */
function openLane(size: number) {
  const lane = newLane('intent:p:w', { projectId: 'p', workflowId: 'w' }, 0);
  lane.open = true;
  lane.size = size;
  lane.deadline = 10_000;
  return lane;
}

describe('lease lane: calls given back', () => {
  it('a returned lease keeps its counts: a call given back later is counted as returned, up to what it used, and waits for a report', () => {
    const lane = openLane(5);
    take(lane, 1);
    take(lane, 1);
    lane.reported = 2;
    const id = lane.leaseId;
    resetLease(lane, 100);
    expect(lane.leaseId).not.toBe(id);
    expect(lateReport(lane)).toBeUndefined();
    expect(giveBack(lane, id)).toBe(true);
    expect(giveBack(lane, id)).toBe(true);
    expect(giveBack(lane, id)).toBe(false);
    expect(lateReport(lane)).toMatchObject({ leaseId: id, used: 2, returned: 2, toldReturned: 0 });
    lateReport(lane)!.toldReturned = 2;
    expect(lateReport(lane)).toBeUndefined();
  });

  it('a call given back while the return is in flight counts as returned (the return carried the counts before it)', () => {
    const lane = openLane(3);
    take(lane, 1);
    lane.reported = 1;
    lane.releasing = true;
    expect(giveBack(lane, lane.leaseId)).toBe(true);
    expect(lane).toMatchObject({ used: 1, returned: 1, reportedReturned: 0 });
    resetLease(lane, 100);
    expect(lateReport(lane)).toMatchObject({ used: 1, returned: 1, toldReturned: 0 });
  });

  it('a lease never used is not kept, and kept leases are forgotten after the window the workflow remembers them', () => {
    const lane = openLane(3);
    resetLease(lane, 0);
    expect(lane.past).toEqual([]);
    lane.open = true;
    lane.size = 3;
    take(lane, 1);
    const id = lane.leaseId;
    resetLease(lane, 100);
    prunePast(lane, 100 + LEASE_LATE_RETURN_MS - 1);
    expect(lane.past.map((p) => p.leaseId)).toEqual([id]);
    prunePast(lane, 100 + LEASE_LATE_RETURN_MS);
    expect(lane.past).toEqual([]);
    expect(giveBack(lane, id)).toBe(false);
  });
});
