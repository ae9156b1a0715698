import { proxyActivities } from '@temporalio/workflow';
import type { ComplianceActivities } from '../activities/compliance';

const { prepareComplianceExport, buildComplianceExportPart, finalizeComplianceExport, failComplianceExport } = proxyActivities<ComplianceActivities>({
  startToCloseTimeout: '30 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 10 },
});

/**
 * One compliance export: fix the window's log range and checkpoint, write each part's files, then
 * the signed manifest. Progress is written to the export row by the activities; a worker restart
 * resumes at the step that was running (each step is idempotent).
 */
export async function complianceExportWorkflow(input: { exportId: string }): Promise<void> {
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
