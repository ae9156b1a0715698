import type { Queryable } from '../db/pool';
import { getPolicy } from '../db/repositories/policies';
import { readSpendRows } from '../db/repositories/spend';
import { periodOf } from './periods';

/**
 * The project's monthly cap and its current spend for the UTC calendar month containing `now`:
 * settled spend plus active reservations (what the monthly-cap check itself compares against).
 */
export async function monthlyBudgetSnapshot(
  db: Queryable,
  projectId: string,
  now: Date,
): Promise<{ monthly_cap_usd_micros: number | null; current_monthly_spend_usd_micros: number }> {
  const policy = await getPolicy(db, projectId);
  const month = periodOf('month', now);
  const [row] = await readSpendRows(db, projectId, [{ kind: 'month', start: month.start }]);
  return {
    monthly_cap_usd_micros: policy.document.budgets.monthly_usd_micros,
    current_monthly_spend_usd_micros: row ? Number(row.reserved_micros) + Number(row.settled_micros) : 0,
  };
}
