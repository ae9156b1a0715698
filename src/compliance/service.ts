/** Compliance exports: creation (row + workflow), the API view. */
import type { Client } from '@temporalio/client';
import { WorkflowIdConflictPolicy } from '@temporalio/common';
import type { Db } from '../db/pool';
import { newId } from '../ids';
import type { Logger } from '../logger';
import { ApiError } from '../errors';
import { insertExport, updateExport, type ExportPart, type ExportRow } from '../db/repositories/compliance-exports';

/** The export's workflow id (one workflow per export). */
export const complianceExportWorkflowId = (exportId: string) => `compliance-export:${exportId}`;

export interface ComplianceDeps {
  db: Db;
  logger: Logger;
  temporal: { client: Client; taskQueue: string };
  heartbeatTimeoutMs: number;
}

export async function createComplianceExport(
  deps: ComplianceDeps,
  input: { projectId: string; since: Date; until: Date; include: ExportPart[]; requestedBy: string },
): Promise<ExportRow> {
  const id = newId('cexp');
  const row = await insertExport(deps.db, { id, ...input });
  try {
    await deps.temporal.client.workflow.start('complianceExportWorkflow', {
      workflowId: complianceExportWorkflowId(id),
      taskQueue: deps.temporal.taskQueue,
      args: [{ exportId: id, heartbeatTimeoutMs: deps.heartbeatTimeoutMs }],
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    });
  } catch (err) {
    deps.logger.error({ err, export_id: id }, 'compliance export workflow could not be started');
    await updateExport(deps.db, id, { status: 'failed', completed: true, error: { code: 'export_not_started', message: 'The export could not be started' } }).catch(() => undefined);
    throw new ApiError(503, 'exports_unavailable', 'The export could not be started; retry later', { details: { export_id: id } });
  }
  return row;
}

export function exportView(r: ExportRow) {
  const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
  return {
    id: r.id,
    object: 'compliance_export' as const,
    status: r.status,
    window: { since: iso(r.window_start), until: iso(r.window_end) },
    include: r.include,
    progress: r.progress ?? {},
    log_range:
      r.first_index === null || r.first_index === undefined
        ? null
        : { first_index: Number(r.first_index), last_index: Number(r.last_index), checkpoint_size: r.checkpoint_size === null ? null : Number(r.checkpoint_size) },
    bundle: r.status === 'completed' ? { sha256: r.bundle_sha256, bytes: r.bundle_bytes === null ? null : Number(r.bundle_bytes), download_url: `/v1/compliance/exports/${r.id}/download`, format: 'tar' } : null,
    error: r.error,
    created_at: iso(r.created_at),
    started_at: iso(r.started_at),
    completed_at: iso(r.completed_at),
  };
}
