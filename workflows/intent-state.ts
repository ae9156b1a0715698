/**
 * The intent's state and its synchronous transitions (Temporal's "safe message handlers" shape, as
 * session-state.ts for sessions): the workflow's handlers validate and apply through these, so each
 * Update is decided against the state the previous one left. No workflow APIs and no I/O here.
 */
import { ApplicationFailure } from '@temporalio/common';
import { INTENT_FAILURES, type AmendArgs, type IntentState } from './intent-messages';

export const MAX_RESERVE_BATCH = 10_000;

export class IntentActor {
  /** Updates handled by this run (continue-as-new after `canAfter`). */
  handledThisRun = 0;

  constructor(readonly state: IntentState) {}

  get active(): boolean {
    return this.state.status === 'active';
  }

  notActive(): ApplicationFailure {
    return ApplicationFailure.create({
      type: INTENT_FAILURES.notActive,
      message: `Workflow ${this.state.workflowId} is ${this.state.status}, not active`,
      details: [{ status: this.state.status }],
      nonRetryable: true,
    });
  }

  /** Counts an accepted Update (for this run and over the intent's life). */
  handled(): void {
    this.handledThisRun++;
    this.state.totalUpdatesHandled++;
  }

  checkAmend(args: AmendArgs): void {
    if (!this.active) throw this.notActive();
    if (args.ifMatchVersion !== this.state.version) {
      throw ApplicationFailure.create({
        type: INTENT_FAILURES.versionConflict,
        message: `if_match_version ${args.ifMatchVersion} does not match the current version ${this.state.version}`,
        details: [{ current_version: this.state.version, if_match_version: args.ifMatchVersion }],
        nonRetryable: true,
      });
    }
  }

  /** Applies a validated amendment: version + 1 and the new call counts; returns what it replaced. */
  amend(args: AmendArgs): { appliedAgainst: number; previous: { expected: number | null; max: number | null } } {
    const s = this.state;
    const previous = { expected: s.expectedCalls, max: s.maxCalls };
    const appliedAgainst = s.version;
    s.version++;
    if (args.newExpectedCalls != null) s.expectedCalls = args.newExpectedCalls;
    if (args.newMaxCalls != null) s.maxCalls = args.newMaxCalls;
    return { appliedAgainst, previous };
  }

  static checkReserveBatch(n: number): void {
    if (!Number.isInteger(n) || n < 1 || n > MAX_RESERVE_BATCH) {
      throw ApplicationFailure.create({ type: INTENT_FAILURES.invalid, message: `reserveCalls needs an integer 1..${MAX_RESERVE_BATCH}`, nonRetryable: true });
    }
  }

  /** Coalesced reservations: up to `n` calls within `room` (what the ceiling and leases leave). */
  reserve(n: number, room: number) {
    const s = this.state;
    let granted = 0;
    if (this.active) {
      granted = Math.min(n, room);
      s.actualCalls += granted;
    }
    return { granted, status: s.status, actualCalls: s.actualCalls, maxCalls: s.maxCalls };
  }
}
