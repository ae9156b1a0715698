/**
 * Reading the money of a project (management API): the day counters and active intents the
 * month-end forecast starts from, and the firewall's outcomes. Settled usage by day, provider,
 * model and API key is read in ./settled-usage.ts.
 */
import type { Queryable } from '../pool';

/** Settled spend per day of [fromDay, toDay] (UTC dates) from the day counters the caps are checked against. */
export async function dailySettled(db: Queryable, projectId: string, fromDay: string, toDay: string): Promise<{ day: string; settled_usd_micros: number; reserved_usd_micros: number }[]> {
  const { rows } = await db.query<{ day: string; settled: string; reserved: string }>(
    `SELECT to_char(period_start, 'YYYY-MM-DD') AS day, settled_micros AS settled, reserved_micros AS reserved
       FROM spend_counters
      WHERE project_id = $1 AND period_kind = 'day' AND period_start BETWEEN $2::date AND $3::date
      ORDER BY period_start`,
    [projectId, fromDay, toDay],
  );
  return rows.map((r) => ({ day: r.day, settled_usd_micros: Number(r.settled), reserved_usd_micros: Number(r.reserved) }));
}

/** Active intents: their projected cost and the calls they have left. */
export async function activeIntentProjections(db: Queryable, projectId: string): Promise<{ workflow_id: string; projected_usd_micros: number; expected_calls: number | null; max_calls: number | null; actual_calls: number }[]> {
  const { rows } = await db.query<{ workflow_id: string; amount: string | null; expected_calls: number | null; max_calls: number | null; actual_calls: number }>(
    `SELECT workflow_id, projected_cost->>'amount_micros' AS amount, expected_calls, max_calls, actual_calls
       FROM intents WHERE project_id = $1 AND status = 'active' ORDER BY declared_at`,
    [projectId],
  );
  return rows.map((r) => ({ workflow_id: r.workflow_id, projected_usd_micros: Number(r.amount ?? 0), expected_calls: r.expected_calls, max_calls: r.max_calls, actual_calls: r.actual_calls }));
}

/** Governance surfaces whose requests carry prompt text the firewall inspects (POST /v1/permits carries none). */
export const INSPECTED_ROUTES_SQL = "(route IN ('executions', 'execute', 'jobs', 'sessions') OR route LIKE 'proxy:%')";

export interface FirewallModelRow {
  provider: string | null;
  model: string | null;
  inspected: number;
  blocked: number;
  flagged: number;
}

export interface FirewallCategoryRow {
  category: string;
  model: string | null;
  blocked: number;
  flagged: number;
}

/**
 * Firewall outcomes of a window from the stored decisions (permits issued in [from, to)): requests
 * inspected per model, and blocked (`block` mode) or flagged (`monitor` mode) ones per category.
 * Counts only: no prompt text is stored, so none can be read.
 */
export async function firewallOutcomes(db: Queryable, projectId: string, from: Date, to: Date): Promise<{ byModel: FirewallModelRow[]; byCategory: FirewallCategoryRow[] }> {
  const fw = "metadata->'decision_metadata'->'firewall'";
  const [models, categories] = await Promise.all([
    db.query<FirewallModelRow>(
      `SELECT provider, model, count(*)::int AS inspected,
              count(*) FILTER (WHERE ${fw}->>'mode' = 'block')::int AS blocked,
              count(*) FILTER (WHERE ${fw}->>'mode' = 'monitor')::int AS flagged
         FROM permits
        WHERE project_id = $1 AND issued_at >= $2 AND issued_at < $3 AND ${INSPECTED_ROUTES_SQL}
        GROUP BY 1, 2 ORDER BY 1, 2`,
      [projectId, from, to],
    ),
    db.query<FirewallCategoryRow>(
      `SELECT c.category, p.model,
              count(*) FILTER (WHERE p.${fw}->>'mode' = 'block')::int AS blocked,
              count(*) FILTER (WHERE p.${fw}->>'mode' = 'monitor')::int AS flagged
         FROM permits p CROSS JOIN LATERAL jsonb_array_elements_text(coalesce(p.${fw}->'categories', '[]'::jsonb)) AS c(category)
        WHERE p.project_id = $1 AND p.issued_at >= $2 AND p.issued_at < $3
        GROUP BY 1, 2 ORDER BY 1, 2`,
      [projectId, from, to],
    ),
  ]);
  return { byModel: models.rows, byCategory: categories.rows };
}
