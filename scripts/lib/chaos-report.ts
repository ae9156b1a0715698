/** The fault suite's report, the markdown table docs/reliability.md quotes, and the suite's checks. */
import type { ScenarioReport } from './chaos-scenario';

export interface ChaosReport {
  scenarios: ScenarioReport[];
  /** Accepted jobs and how they closed (`dispatch_interrupted` failures: an attempt lost mid-call). */
  jobs: { submitted: number; terminal: number; byStatus: Record<string, number> };
  /** Seconds from the end of load until no in-flight row and no held reservation remained (null: never within the limit). */
  settledAfterSeconds: number | null;
  inflightRowsLeft: number;
  reservationsHeld: number;
  /** Calls (sync, stream or job) the provider saw more than once: must be none. */
  doubleDispatches: string[];
  dispatchedByEmulator: number;
  recordedDispatches: number;
  chainOk: boolean;
  chainEvents: number;
  /** The intent joined by a fifth of the calls, read once everything settled. */
  intent: {
    maxCalls: number;
    /** Intent-joined calls answered 403 because the ceiling was reached. */
    refusedAtCeiling: number;
    /** Allowed permits joined to the intent: the calls it granted. */
    allowedPermits: number;
    /** The intent workflow's counter. */
    actualCalls: number;
    /** Call leases the workflow still counts as outstanding. */
    openLeases: number;
  };
}

/** The report as the markdown table docs/reliability.md quotes. */
export function chaosMarkdown(r: ChaosReport): string {
  const lines = ['| scenario | calls | answered | refused (process down) | broken mid-call | statuses | recovery |', '|---|---|---|---|---|---|---|'];
  for (const s of r.scenarios) {
    lines.push(`| ${s.scenario} | ${s.calls} | ${s.answered} | ${s.refused} | ${s.broken} | ${Object.entries(s.byStatus).map(([k, v]) => `${k}: ${v}`).join(', ')} | ${s.recoveryMs === null ? '—' : `${(s.recoveryMs / 1000).toFixed(1)} s`} |`);
  }
  lines.push('');
  lines.push(`jobs: ${r.jobs.terminal}/${r.jobs.submitted} terminal ${JSON.stringify(r.jobs.byStatus)}; in-flight rows left ${r.inflightRowsLeft}, reservations held ${r.reservationsHeld} (settled ${r.settledAfterSeconds ?? 'never'} s after the load); double dispatches ${r.doubleDispatches.length}${r.doubleDispatches.length ? ` (${r.doubleDispatches.slice(0, 5).join(', ')})` : ''}; provider requests ${r.dispatchedByEmulator}, recorded dispatch starts ${r.recordedDispatches}; event chain ${r.chainOk ? 'verifies' : 'BROKEN'} (${r.chainEvents} events)`);
  lines.push(`intent: max_calls ${r.intent.maxCalls}, allowed calls ${r.intent.allowedPermits}, counter ${r.intent.actualCalls}, refused at the ceiling ${r.intent.refusedAtCeiling}, leases outstanding ${r.intent.openLeases}`);
  return lines.join('\n');
}

/** The suite's checks; empty when every one holds. */
export function chaosFailures(r: ChaosReport): string[] {
  const f: string[] = [];
  if (r.jobs.terminal < r.jobs.submitted) f.push(`${r.jobs.submitted - r.jobs.terminal} jobs never reached a terminal status`);
  if (r.inflightRowsLeft !== 0) f.push(`${r.inflightRowsLeft} in-flight rows left after the reconciliation window`);
  if (r.reservationsHeld !== 0) f.push(`${r.reservationsHeld} reservations still held after the reconciliation window`);
  if (r.doubleDispatches.length) f.push(`double dispatches: ${r.doubleDispatches.join(', ')}`);
  // The dispatch record is written before the call (with the permit), so a process that loses
  // PostgreSQL between the two leaves a record without a call (closed by reconciliation); the
  // reverse, a call without a record, must never happen.
  if (r.recordedDispatches < r.dispatchedByEmulator) f.push(`recorded dispatches ${r.recordedDispatches} < emulator ${r.dispatchedByEmulator}: a provider call without a record`);
  if (!r.chainOk) f.push('the event chain does not verify');
  if (r.intent.allowedPermits > r.intent.maxCalls) f.push(`intent: ${r.intent.allowedPermits} calls allowed over max_calls ${r.intent.maxCalls}`);
  // A call taken from a lease whose governance then failed (PostgreSQL down: a 503, no permit) is
  // given back, reported as returned if the lease had reported it (after the lease closed, by a
  // report naming it); one whose report failed still counts: the counter may exceed the allowed
  // calls, never max_calls.
  if (r.intent.actualCalls < r.intent.allowedPermits || r.intent.actualCalls > r.intent.maxCalls)
    f.push(`intent: counter ${r.intent.actualCalls} outside [${r.intent.allowedPermits} allowed calls, max_calls ${r.intent.maxCalls}]`);
  if (r.intent.openLeases !== 0) f.push(`intent: ${r.intent.openLeases} call leases still outstanding`);
  return f;
}
