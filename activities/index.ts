import type { ActivityDeps } from './deps';
import { createMaintenanceActivities } from './maintenance';
import { createIntentActivities } from './intents';
import { createJobActivities } from './jobs';
import { createWebhookActivities } from './webhooks';
import { createReconciliationActivities } from './reconciliation';
import { createIntegrityActivities } from './integrity';
import { createComplianceActivities } from './compliance';
import { createSessionActivities } from './sessions';

export type { ActivityDeps } from './deps';

/** All activities the worker registers, built from their dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createMaintenanceActivities(deps),
    ...createIntentActivities(deps),
    ...createJobActivities(deps),
    ...createWebhookActivities(deps),
    ...createReconciliationActivities(deps),
    ...createIntegrityActivities(deps),
    ...createComplianceActivities(deps),
    ...createSessionActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
