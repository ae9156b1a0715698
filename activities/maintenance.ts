import { purgeExpiredIdempotencyKeys } from '../src/db/repositories/idempotency';
import type { ActivityDeps } from './deps';

export function createMaintenanceActivities({ db, clock, governance }: Pick<ActivityDeps, 'db' | 'clock' | 'governance'>) {
  return {
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
