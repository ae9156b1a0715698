import { Context } from '@temporalio/activity';
import { ensureWeekPartitions } from '../src/db/partitions';
import { purgeExpiredIdempotencyKeys } from '../src/db/repositories/idempotency';
import { runRetention } from '../src/retention/run';
import type { RetentionReport } from '../src/retention/types';
import type { ActivityDeps } from './deps';

export function createMaintenanceActivities({ db, clock, governance, config }: Pick<ActivityDeps, 'db' | 'clock' | 'governance' | 'config'>) {
  return {
    /**
     * Archives and deletes every project's records older than its retention (src/retention/run.ts).
     * Heartbeats between steps, so a worker that dies is noticed and the run retried; a retry
     * finishes what the dead one started.
     */
    async runRetention(): Promise<Pick<RetentionReport, 'object'> & { archived: string[] }> {
      const ctx = Context.current();
      // Building one archive can take longer than the heartbeat timeout: beat on a timer too.
      const timer = setInterval(() => ctx.heartbeat(), 10_000);
      timer.unref?.();
      try {
        const report = await runRetention({ db, config }, { now: clock.now(), onStep: () => ctx.heartbeat() });
        return { object: report.object, archived: report.projects.flatMap((p) => (p.archive ? [p.archive.id] : [])) };
      } finally {
        clearInterval(timer);
      }
    },
    /** Creates the coming weeks' partitions of the call record and the permit (src/db/partitions.ts). */
    async ensurePartitions(): Promise<{ created: string[]; skipped: string[] }> {
      return ensureWeekPartitions(db, clock.now());
    },
    /** Deletes one batch of expired idempotency records; returns the number deleted. */
    async purgeExpiredIdempotencyKeys(): Promise<number> {
      return purgeExpiredIdempotencyKeys(db, clock.now());
    },
    /** Releases spend reserved by permits that expired unsettled (abandoned executions, unclosed permits). */
    async expireStaleReservations(): Promise<number> {
      return governance.expireStaleReservations(clock.now());
    },
  };
}

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;
