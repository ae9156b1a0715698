import { continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import type { IntegrityActivities } from '../activities/integrity';

const { issueCheckpoints } = proxyActivities<IntegrityActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { maximumAttempts: 5 },
});

export const CHECKPOINT_WORKFLOW_ID = 'tollgate-integrity-checkpoints';

export interface CheckpointLoopInput {
  /** Seconds between rounds (at most 60: a log that grew is checkpointed within a minute). */
  intervalSeconds: number;
  roundsPerRun?: number;
}

/**
 * Signs a checkpoint of every project's event log that grew since its last one, every
 * `intervalSeconds`, forever (continue-as-new keeps the history bounded). Started once per
 * namespace with USE_EXISTING, like the maintenance workflows; a round on a log that did not grow
 * issues nothing.
 */
export async function checkpointWorkflow(input: CheckpointLoopInput): Promise<void> {
  const rounds = input.roundsPerRun ?? 200;
  for (let i = 0; i < rounds; i++) {
    await issueCheckpoints();
    await sleep(Math.min(input.intervalSeconds, 60) * 1000);
  }
  await continueAsNew<typeof checkpointWorkflow>(input);
}
