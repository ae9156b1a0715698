import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { WorkflowIdConflictPolicy } from '@temporalio/common';
import { Client } from '@temporalio/client';
import { createActivities, ActivityDeps } from '../../activities';
import { IDEMPOTENCY_CLEANUP_WORKFLOW_ID, RESERVATION_EXPIRY_WORKFLOW_ID } from '../../workflows/maintenance';
import { RECONCILIATION_WORKFLOW_ID } from '../../workflows/reconciliation';
import { CHECKPOINT_WORKFLOW_ID } from '../../workflows/checkpoint';

export const WORKFLOWS_PATH = require.resolve('../../workflows');

/** Bundles workflow code once (production build, test global setup). */
export async function bundleWorkflows(): Promise<string> {
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietBundlerLogger });
  return code;
}

const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: (message: string) => console.error(message),
};

export async function createWorker(opts: {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  workflowBundlePath?: string;
  /** Workflow code bundled by the caller (two workers of one process share one bundle). */
  workflowBundleCode?: string;
}): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities: createActivities(opts.deps),
    ...(opts.workflowBundlePath
      ? { workflowBundle: { codePath: opts.workflowBundlePath } }
      : opts.workflowBundleCode
        ? { workflowBundle: { code: opts.workflowBundleCode } }
        : { workflowsPath: WORKFLOWS_PATH, bundlerOptions: { logger: quietBundlerLogger } as never }),
    shutdownGraceTime: '10s',
  });
}

/** Starts the singleton maintenance workflows; a no-op when they already run. */
export async function ensureMaintenanceWorkflows(client: Client, taskQueue: string): Promise<void> {
  await client.workflow.start('idempotencyCleanupWorkflow', {
    workflowId: IDEMPOTENCY_CLEANUP_WORKFLOW_ID,
    taskQueue,
    args: [{ intervalSeconds: 300 }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
  });
  await client.workflow.start('reconciliationWorkflow', {
    workflowId: RECONCILIATION_WORKFLOW_ID,
    taskQueue,
    args: [{ intervalSeconds: 10 }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
  });
  await client.workflow.start('reservationExpiryWorkflow', {
    workflowId: RESERVATION_EXPIRY_WORKFLOW_ID,
    taskQueue,
    args: [{ intervalSeconds: 60 }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
  });
  // Signed checkpoints of every project's event log that grew (src/integrity/log.ts).
  await client.workflow.start('checkpointWorkflow', {
    workflowId: CHECKPOINT_WORKFLOW_ID,
    taskQueue,
    args: [{ intervalSeconds: 30 }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
  });
}
