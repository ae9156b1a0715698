import { purgeExpiredIdempotencyKeys } from '../src/db/repositories/idempotency';
import { createGovernance } from '../src/governance';
import type { ActivityDeps } from './deps';

export function createMaintenanceActivities({ db, clock, governance }: Pick<ActivityDeps, 'db' | 'clock' | 'governance'>) {
  const spend = governance ?? createGovernance({ db, clock });
  return {
    /** Deletes one batch of expired idempotency records; returns the number deleted. */
    async purgeExpiredIdempotencyKeys(): Promise<number> {
      return purgeExpiredIdempotencyKeys(db, clock.now());
    },
    /** Releases spend reserved by permits that expired unsettled (abandoned executions, unclosed permits). */
    async expireStaleReservations(): Promise<number> {
      return spend.expireStaleReservations(clock.now());
    },
  };
}

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;
