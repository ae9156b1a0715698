import { purgeExpiredIdempotencyKeys } from '../src/db/repositories/idempotency';
import type { ActivityDeps } from './deps';

export function createMaintenanceActivities({ db, clock }: Pick<ActivityDeps, 'db' | 'clock'>) {
  return {
    /** Deletes one batch of expired idempotency records; returns the number deleted. */
    async purgeExpiredIdempotencyKeys(): Promise<number> {
      return purgeExpiredIdempotencyKeys(db, clock.now());
    },
  };
}

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;
