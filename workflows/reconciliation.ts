import { continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import type { ReconciliationActivities } from '../activities/reconciliation';

const { closeInterruptedCalls } = proxyActivities<ReconciliationActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

export const RECONCILIATION_WORKFLOW_ID = 'tollgate-reconciliation-inflight-calls';

export interface ReconciliationInput {
  intervalSeconds: number;
  /** Rounds per run before continue-as-new keeps the history bounded. */
  roundsPerRun?: number;
}

/**
 * The singleton that closes governed calls whose process died mid-dispatch (activities/
 * reconciliation.ts), one round per interval, forever. Started by every worker with USE_EXISTING.
 */
export async function reconciliationWorkflow(input: ReconciliationInput): Promise<void> {
  const rounds = input.roundsPerRun ?? 200;
  for (let i = 0; i < rounds; i++) {
    await closeInterruptedCalls();
    await sleep(input.intervalSeconds * 1000);
  }
  await continueAsNew<typeof reconciliationWorkflow>(input);
}
