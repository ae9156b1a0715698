import { ApplicationFailure } from '@temporalio/common';
import { IntentActor, MAX_RESERVE_BATCH } from '../../../workflows/intent-state';
import { INTENT_FAILURES, type IntentState } from '../../../workflows/intent-messages';

function actor(over: Partial<IntentState> = {}): IntentActor {
  const state = {
    projectId: 'proj_1', workflowId: 'wf', status: 'active', version: 1, expectedCalls: 10, maxCalls: 12, actualCalls: 0,
    expiresAtMs: null, totalUpdatesHandled: 0, run: 1, projection: {}, leases: {}, ...over,
  } as unknown as IntentState;
  return new IntentActor(state);
}

const failureType = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof ApplicationFailure ? err.type : 'not an ApplicationFailure';
  }
  return null;
};

describe('IntentActor', () => {
  it('amends against the current version only, and moves the version and counts', () => {
    const a = actor();
    expect(failureType(() => a.checkAmend({ ifMatchVersion: 2, amendmentId: 'am_1' } as never))).toBe(INTENT_FAILURES.versionConflict);
    a.checkAmend({ ifMatchVersion: 1, amendmentId: 'am_1' } as never);
    expect(a.amend({ ifMatchVersion: 1, newMaxCalls: 20, amendmentId: 'am_1' } as never)).toEqual({ appliedAgainst: 1, previous: { expected: 10, max: 12 } });
    expect(a.state).toMatchObject({ version: 2, expectedCalls: 10, maxCalls: 20 });
    expect(failureType(() => a.checkAmend({ ifMatchVersion: 1 } as never))).toBe(INTENT_FAILURES.versionConflict);
  });

  it('refuses everything once not active', () => {
    const a = actor({ status: 'completed' } as Partial<IntentState>);
    expect(failureType(() => a.checkAmend({ ifMatchVersion: 1 } as never))).toBe(INTENT_FAILURES.notActive);
    expect(a.reserve(5, 10)).toMatchObject({ granted: 0, status: 'completed' });
  });

  it('grants at most the room left, counts Updates for continue-as-new, validates batch sizes', () => {
    const a = actor();
    expect(a.reserve(5, 3)).toEqual({ granted: 3, status: 'active', actualCalls: 3, maxCalls: 12 });
    a.handled();
    a.handled();
    expect(a.handledThisRun).toBe(2);
    expect(a.state.totalUpdatesHandled).toBe(2);
    for (const bad of [0, -1, 1.5, MAX_RESERVE_BATCH + 1]) expect(failureType(() => IntentActor.checkReserveBatch(bad))).toBe(INTENT_FAILURES.invalid);
    expect(failureType(() => IntentActor.checkReserveBatch(MAX_RESERVE_BATCH))).toBeNull();
  });
});
