import { proxyActivities } from '@temporalio/workflow';
import type { ComplianceActivities } from '../activities/compliance';

export interface ComplianceExportInput {
  exportId: string;
  /** A step whose worker stopped heartbeating this long is retried on another worker (COMPLIANCE_EXPORT_HEARTBEAT_TIMEOUT_MS). */
  heartbeatTimeoutMs?: number;
}

/**
 * One compliance export: fix the window's log range and checkpoint, write each part's files, then
 * the signed manifest. Progress is written to the export row by the activities; a worker restart
 * resumes at the step that was running (each step is idempotent).
 */
export async function complianceExportWorkflow(input: ComplianceExportInput): Promise<void> {
  const { prepareComplianceExport, buildComplianceExportPart, finalizeComplianceExport, failComplianceExport } = proxyActivities<ComplianceActivities>({
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: input.heartbeatTimeoutMs ?? 30_000,
    retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 10 },
  });
  try {
    const { parts } = await prepareComplianceExport(input.exportId);
    for (const part of parts) await buildComplianceExportPart(input.exportId, part);
    await finalizeComplianceExport(input.exportId);
  } catch (err) {
    const cause = (err as { cause?: { message?: string } }).cause;
    await failComplianceExport(input.exportId, cause?.message ?? (err instanceof Error ? err.message : String(err)));
    throw err;
  }
}
