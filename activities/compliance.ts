import { Context } from '@temporalio/activity';
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
  /** Heartbeats while `fn` runs: a worker that dies stops heartbeating, and the step is retried elsewhere after the heartbeat timeout. */
  const beating = async <T>(fn: () => Promise<T>): Promise<T> => {
    const ctx = Context.current();
    const every = ctx.info.heartbeatTimeoutMs ? Math.max(200, Math.floor(ctx.info.heartbeatTimeoutMs / 3)) : 0;
    const timer = every ? setInterval(() => ctx.heartbeat(), every) : null;
    timer?.unref?.();
    try {
      return await fn();
    } finally {
      if (timer) clearInterval(timer);
    }
  };
  return {
    async prepareComplianceExport(exportId: string): Promise<{ parts: ExportPart[] }> {
      return beating(() => prepareExport(deps, exportId)).catch(final);
    },
    async buildComplianceExportPart(exportId: string, part: ExportPart): Promise<number> {
      return beating(() => buildExportPart(deps, exportId, part)).catch(final);
    },
    async finalizeComplianceExport(exportId: string): Promise<{ bundle_sha256: string; bundle_bytes: number }> {
      return beating(() => finalizeExport(deps, exportId));
    },
    async failComplianceExport(exportId: string, message: string): Promise<void> {
      await failExport(deps, exportId, message);
    },
  };
}

export type ComplianceActivities = ReturnType<typeof createComplianceActivities>;
