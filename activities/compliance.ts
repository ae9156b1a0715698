import { ApplicationFailure } from '@temporalio/common';
import { buildExportPart, failExport, finalizeExport, prepareExport } from '../src/compliance/build';
import type { ExportPart } from '../src/db/repositories/compliance-exports';
import { LogIntegrityError } from '../src/integrity/log';
import type { ActivityDeps } from './deps';

/** The compliance export's steps (src/compliance/build.ts); each is idempotent, so a retry after a worker restart redoes it. */
export function createComplianceActivities({ db, config }: Pick<ActivityDeps, 'db' | 'config'>) {
  const deps = { db, config };
  const final = (err: unknown): never => {
    // A log that fails its integrity check will fail again: not retried, the export fails naming the position.
    if (err instanceof LogIntegrityError) throw ApplicationFailure.create({ type: 'LogIntegrityError', message: err.message, nonRetryable: true });
    throw err;
  };
  return {
    async prepareComplianceExport(exportId: string): Promise<{ parts: ExportPart[] }> {
      return prepareExport(deps, exportId).catch(final);
    },
    async buildComplianceExportPart(exportId: string, part: ExportPart): Promise<number> {
      return buildExportPart(deps, exportId, part).catch(final);
    },
    async finalizeComplianceExport(exportId: string): Promise<{ bundle_sha256: string; bundle_bytes: number }> {
      return finalizeExport(deps, exportId);
    },
    async failComplianceExport(exportId: string, message: string): Promise<void> {
      await failExport(deps, exportId, message);
    },
  };
}

export type ComplianceActivities = ReturnType<typeof createComplianceActivities>;
