import { continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import type { MaintenanceActivities } from '../activities/maintenance';

const { purgeExpiredIdempotencyKeys, expireStaleReservations, ensurePartitions } = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 5 },
});

const { runRetention } = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '2 minutes',
  retry: { initialInterval: '10 seconds', maximumInterval: '10 minutes', maximumAttempts: 5 },
});

export interface MaintenanceLoopInput {
  intervalSeconds: number;
  /** Rounds per run before continue-as-new keeps the history bounded. */
  roundsPerRun?: number;
}

export const IDEMPOTENCY_CLEANUP_WORKFLOW_ID = 'tollgate-maintenance-idempotency-cleanup';
export const RESERVATION_EXPIRY_WORKFLOW_ID = 'tollgate-maintenance-reservation-expiry';
export const RETENTION_WORKFLOW_ID = 'tollgate-maintenance-retention';
export const PARTITION_MAINTENANCE_WORKFLOW_ID = 'tollgate-maintenance-partitions';

/**
 * Deletes idempotency records past their retention window, forever, one round per interval.
 * Started once per namespace by every worker with USE_EXISTING, so replicas share one instance.
 */
export async function idempotencyCleanupWorkflow(input: MaintenanceLoopInput): Promise<void> {
  await loop(input, async () => {
    // Drain in batches so one round never holds a long-running delete.
    while ((await purgeExpiredIdempotencyKeys()) > 0) {
      /* next batch */
    }
  });
}

/** Releases the reservations of permits that expired without usage being settled. */
export async function reservationExpiryWorkflow(input: MaintenanceLoopInput): Promise<void> {
  await loop(input, async () => {
    await expireStaleReservations();
  });
}

/**
 * Ages out records past their project's retention: archive, verify, then delete
 * (src/retention/run.ts). A round that fails is retried by the activity's policy and otherwise
 * left to the next round, which resumes the unfinished archive.
 */
export async function retentionWorkflow(input: MaintenanceLoopInput): Promise<void> {
  await loop(input, async () => {
    await runRetention();
  });
}

/**
 * Creates the week partitions of the weeks to come ahead of time (src/db/partitions.ts), so that no
 * call ever waits for one; its first round runs as soon as a worker starts it.
 */
export async function partitionMaintenanceWorkflow(input: MaintenanceLoopInput): Promise<void> {
  await loop(input, async () => {
    await ensurePartitions();
  });
}

async function loop(input: MaintenanceLoopInput, round: () => Promise<void>): Promise<void> {
  const rounds = input.roundsPerRun ?? 100;
  for (let i = 0; i < rounds; i++) {
    await round();
    await sleep(input.intervalSeconds * 1000);
  }
  await continueAsNew<(input: MaintenanceLoopInput) => Promise<void>>(input);
}
