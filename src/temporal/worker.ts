import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { WorkflowIdConflictPolicy } from '@temporalio/common';
import { Client } from '@temporalio/client';
import type { Activities } from '../../activities';
import { IDEMPOTENCY_CLEANUP_WORKFLOW_ID, PARTITION_MAINTENANCE_WORKFLOW_ID, RESERVATION_EXPIRY_WORKFLOW_ID, RETENTION_WORKFLOW_ID } from '../../workflows/maintenance';
import { RECONCILIATION_WORKFLOW_ID } from '../../workflows/reconciliation';
import { CHECKPOINT_WORKFLOW_ID } from '../../workflows/checkpoint';

export const WORKFLOWS_PATH = require.resolve('../../workflows');

/** Bundles workflow code once (production build, test global setup). */
export async function bundleWorkflows(): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    logger: quietBundlerLogger,
    // The worker needs an inline source map (for workflow stack traces) but not the original sources
    // inside it: without them every worker process holds ~1 MB less, twice (docs/decisions/lazy-modules.md).
    webpackConfigHook: (config) => ({ ...config, devtool: 'inline-nosources-source-map' }),
  });
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

interface WorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** The process's activities (`createActivities`), built once for all its workers. */
  activities: Activities;
}

export async function createWorker(opts: WorkerOptions & {
  /** A prebuilt bundle (`npm run build`, test global setup); without it the worker bundles at start. */
  workflowBundlePath?: string;
}): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities: opts.activities,
    ...(opts.workflowBundlePath
      ? { workflowBundle: { codePath: opts.workflowBundlePath } }
      : { workflowsPath: WORKFLOWS_PATH, bundlerOptions: { logger: quietBundlerLogger } as never }),
    shutdownGraceTime: '10s',
  });
}

/**
 * A worker that runs activities only (no workflow sandbox, so no V8 isolate holding the bundle):
 * used for task queues that exist to give one kind of activity its own slots.
 */
export async function createActivityWorker(opts: WorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities: opts.activities,
    shutdownGraceTime: '10s',
  });
}

/** Starts the singleton maintenance workflows; a no-op when they already run. */
export async function ensureMaintenanceWorkflows(client: Client, taskQueue: string): Promise<void> {
  const singletons = [
    { type: 'idempotencyCleanupWorkflow', workflowId: IDEMPOTENCY_CLEANUP_WORKFLOW_ID, intervalSeconds: 300 },
    // Closes governed calls whose process died mid-dispatch (src/pipeline/inflight.ts).
    { type: 'reconciliationWorkflow', workflowId: RECONCILIATION_WORKFLOW_ID, intervalSeconds: 10 },
    { type: 'reservationExpiryWorkflow', workflowId: RESERVATION_EXPIRY_WORKFLOW_ID, intervalSeconds: 60 },
    // Signed checkpoints of every project's event log that grew (src/integrity/log.ts).
    { type: 'checkpointWorkflow', workflowId: CHECKPOINT_WORKFLOW_ID, intervalSeconds: 30 },
    // Retention: archives, verifies and deletes records past their project's retention (src/retention/run.ts).
    { type: 'retentionWorkflow', workflowId: RETENTION_WORKFLOW_ID, intervalSeconds: 3600 },
    // The coming weeks' partitions of the call record and the permit (src/db/partitions.ts).
    { type: 'partitionMaintenanceWorkflow', workflowId: PARTITION_MAINTENANCE_WORKFLOW_ID, intervalSeconds: 3600 },
  ];
  for (const w of singletons) {
    await client.workflow.start(w.type, {
      workflowId: w.workflowId,
      taskQueue,
      args: [{ intervalSeconds: w.intervalSeconds }],
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    });
  }
}
