/**
 * Reconciliation of governed calls whose process died mid-dispatch (SIGKILL, crash, lost host).
 * The in-process pipeline marks the permit in flight before dispatch (`closing`) and the record
 * clears the mark; a permit still marked past its dispatch deadline can no longer be running (the
 * process enforces that timeout), so it is closed here: recorded `failed` with `error.code`
 * `dispatch_interrupted`, usage estimated from the pre-dispatch input estimate (output unknown,
 * counted 0), spend settled at that estimate and the rest of the reservation released,
 * `request.errored` on the timeline, and the Idempotency-Key resolved to that result. The record
 * statement is the same one the live process would run, guarded by the call record, so a
 * process that was only slow and records later changes nothing (docs/decisions/crash-safety.md).
 */
import { clearInflightCall, findOverdueCalls, type InflightRow } from '../src/db/repositories/inflight-calls';
import { findPermit } from '../src/db/repositories/permits';
import type { IdempotencyCompletion } from '../src/executions/record';
import type { GovernOutcome } from '../src/executions/types';
import { closingFrom } from '../src/pipeline/inflight';
import type { ActivityDeps } from './deps';
import { createGovernedCallActivities } from './governed-call';

export function createReconciliationActivities(deps: ActivityDeps) {
  const { db, clock, logger } = deps;
  const calls = createGovernedCallActivities(deps);

  return {
    /** Closes every in-flight call whose deadline passed; returns how many it recorded. */
    async closeInterruptedCalls(): Promise<number> {
      let closed = 0;
      // A call that cannot be closed (its marker unreadable, its record refused) is logged and
      // left, so it never holds back the calls after it; it is tried again next run.
      const failed = new Set<string>();
      for (let round = 0; round < 50; round++) {
        const rows = (await findOverdueCalls(db, clock.now(), 200 + failed.size)).filter((r) => !failed.has(r.permit_id));
        if (rows.length === 0) break;
        for (const row of rows) {
          try {
            await closeCall(row);
            closed += 1;
          } catch (err) {
            failed.add(row.permit_id);
            logger.error({ err, permitId: row.permit_id, projectId: row.project_id }, 'could not close an interrupted governed call; tried again next run');
          }
        }
      }
      return closed;
    },
  };

  async function closeCall(row: InflightRow): Promise<void> {
    const closing = closingFrom(row.closing);
    const input = closing.input;
    const permit = await findPermit(db, row.project_id, row.permit_id);
    const gov: GovernOutcome = {
      decision: 'allow',
      reason_code: permit?.reason_code ?? 'policy.active_policy_candidate',
      display_reason: permit?.display_reason ?? 'Allowed by the active project policy',
      actions: permit?.actions ?? [],
      dispatch: closing.dispatch,
    };
    const idem = closing.idempotency;
    const idempotency: IdempotencyCompletion | undefined = idem
      ? {
          scope: idem.scope,
          key: idem.key,
          respond: (env) =>
            idem.onInterrupted === 'release'
              ? 'release'
              : idem.onInterrupted === 'mark_completed'
                ? null
                : { status: env.status_code, headers: { 'x-svc-permit-id': row.permit_id }, body: Buffer.from(JSON.stringify(env)) },
        }
      : undefined;
    const startedAt = closing.dispatch?.at ?? 'an unknown time';
    await calls.record(
      input,
      {
        kind: 'interrupted',
        gov,
        message: `the process serving it stopped; dispatched at ${startedAt}, deadline ${new Date(row.deadline).toISOString()}`,
        estimatedInputTokens: closing.estimated_input_tokens,
      },
      idempotency ? { idempotency } : {},
    );
    // A call the live process recorded meanwhile is unmarked already; one still marked was closed now.
    await clearInflightCall(db, row.permit_id);
    logger.warn({ executionId: row.execution_id, projectId: row.project_id }, 'closed a governed call interrupted by a process exit');
  }
}

export type ReconciliationActivities = ReturnType<typeof createReconciliationActivities>;
