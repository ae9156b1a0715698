import type { Queryable } from '../pool';

/** Records a processed webhook event; false when it was recorded before (a redelivery or a replay). */
export async function recordBillingEvent(db: Queryable, e: { provider: string; eventId: string; type: string; projectId: string | null; appliedPlan: string | null }): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO billing_events (provider, event_id, type, project_id, applied_plan) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (provider, event_id) DO NOTHING`,
    [e.provider, e.eventId, e.type, e.projectId, e.appliedPlan],
  );
  return (rowCount ?? 0) === 1;
}
