/**
 * Reading the money of a project (management API): settled spend per day, provider, model and API
 * key from the permits (every governed call, job and permit-first closeout settles its permit), and
 * the day counters and active intents the month-end forecast starts from.
 */
import type { Queryable } from '../pool';

export interface UsageRow {
  day: string;
  provider: string | null;
  model: string | null;
  api_key_id: string | null;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd_micros: number;
}

/**
 * Settled permits in [from, to) by day (UTC), provider, model and API key. A permit settles within
 * its lifetime (at most a day for an allow, longer only for an attested review), so the scan starts
 * at issue times a day before `from` and uses the project's issue-time index.
 */
export async function settledUsage(db: Queryable, projectId: string, from: Date, to: Date): Promise<UsageRow[]> {
  const { rows } = await db.query<UsageRow>(
    `SELECT to_char(settled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, provider, model, metadata->>'key_id' AS api_key_id,
            count(*)::int AS requests, coalesce(sum(actual_input_tokens), 0)::bigint AS input_tokens,
            coalesce(sum(actual_output_tokens), 0)::bigint AS output_tokens, coalesce(sum(actual_cost_micros), 0)::bigint AS cost_usd_micros
       FROM permits
      WHERE project_id = $1 AND reservation_state = 'settled' AND settled_at >= $2 AND settled_at < $3
        AND issued_at >= $2::timestamptz - interval '2 days' AND issued_at < $3
      GROUP BY 1, 2, 3, 4
      ORDER BY 1, 2, 3, 4`,
    [projectId, from, to],
  );
  return rows.map((r) => ({ ...r, input_tokens: Number(r.input_tokens), output_tokens: Number(r.output_tokens), cost_usd_micros: Number(r.cost_usd_micros) }));
}

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

/** Active workflow intents: their projected cost and the calls they have left. */
export async function activeIntentProjections(db: Queryable, projectId: string): Promise<{ workflow_id: string; projected_usd_micros: number; expected_calls: number | null; max_calls: number | null; actual_calls: number }[]> {
  const { rows } = await db.query<{ workflow_id: string; amount: string | null; expected_calls: number | null; max_calls: number | null; actual_calls: number }>(
    `SELECT workflow_id, projected_cost->>'amount_micros' AS amount, expected_calls, max_calls, actual_calls
       FROM workflow_intents WHERE project_id = $1 AND status = 'active' ORDER BY declared_at`,
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
