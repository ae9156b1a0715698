/**
 * Settled usage of a window by day (UTC), provider, model and API key (the Spend page's
 * `GET /v1/projects/{id}/usage`): whole days and hours from the usage rollup
 * (src/db/repositories/usage-rollup.ts), the rest from the permits, in one statement so the rollup
 * and the permits not folded yet are read in one snapshot.
 *
 * A permit counts when it is settled with `settled_at` in [from, to) and was issued in
 * [from - 2 days, to): a permit settles within its lifetime (at most a day for an allow), so the
 * permits are found by the project's issue-time indexes. From the permits come: the permits the
 * fold never sees (action permits, sessions, MCP tools, attested children:
 * `permits_unfolded_issued_idx`) over the whole window; the governed calls' permits settled in
 * the window's edges that are not whole hours and before the project's rollup start; in the
 * rolled-up time, those whose record the sequencer has not folded yet and those a usage closeout
 * settled (`permit_usage_reports`) rather than their record.
 *
 * The window's last, partial hour is read from its rollup row when the window ends at or after
 * the snapshot: every folded permit the snapshot sees was settled by a transaction that began
 * before it (`settled_at` is that transaction's `now()`), so the row holds nothing settled after
 * the window's end. The Spend page's window ends now (`untilNow`); a window ending in the past
 * reads its partial hours from the permits.
 */
import { SNAPSHOT_READ_WITHOUT_JIT, withTransaction, type Db } from '../pool';
import { multirange, perRange, type Range } from './call-metrics';
import { UNFOLDED_RECORDS_SQL } from './call-rollup';
import { FOLDED_PERMIT_SQL, UNFOLDED_PERMIT_SQL } from './governance-rollup';

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

const HOUR = 3_600_000;
const DAY = 86_400_000;

/** Where the settled time of [from, to) is read from: ranges of epoch milliseconds. */
export interface UsagePlan {
  /** From the permits (governed calls' permits): edges of the window that are not whole hours, time before the rollup's start. */
  raw: Range[];
  /** From the rollup's hour and day rows. */
  hours: Range[];
  days: Range[];
  /** The last, partial hour [start of the hour, to): from its rollup row when the window ends after the snapshot, else from the permits. */
  tail: Range[];
}

const floorTo = (t: number, unit: number) => Math.floor(t / unit) * unit;
const ceilTo = (t: number, unit: number) => Math.ceil(t / unit) * unit;

export function planUsage(from: number, to: number, rolledFrom: number | null): UsagePlan {
  const plan: UsagePlan = { raw: [], hours: [], days: [], tail: [] };
  const start = Math.min(to, Math.max(from, rolledFrom ?? from));
  if (from < start) plan.raw.push([from, start]);
  const h0 = ceilTo(start, HOUR);
  const h1 = floorTo(to, HOUR);
  if (h0 > h1) {
    // Within one hour that the rollup holds only from `start` on (or not at all).
    if (start < to) plan.raw.push([start, to]);
    return plan;
  }
  if (start < h0) plan.raw.push([start, h0]);
  const d0 = ceilTo(h0, DAY);
  const d1 = floorTo(h1, DAY);
  if (d0 < d1) {
    if (h0 < d0) plan.hours.push([h0, d0]);
    plan.days.push([d0, d1]);
    if (d1 < h1) plan.hours.push([d1, h1]);
  } else if (h0 < h1) {
    plan.hours.push([h0, h1]);
  }
  if (h1 < to) plan.tail.push([h1, to]);
  return plan;
}

/** The usage rollup's rows of one width in each range of a multirange parameter, one index range scan per range (see `perRange`). */
const rollupRows = (ranges: string, width: number) =>
  `${perRange(ranges, `SELECT * FROM usage_rollup c WHERE c.project_id = $1 AND c.width = ${width} AND c.start >= lower(r) AND c.start < upper(r)`)} AS c`;

const PERMIT_COLUMNS = "p.settled_at, p.provider, p.model, p.metadata->>'key_id' AS key_id, p.actual_input_tokens, p.actual_output_tokens, p.actual_cost_micros";

/**
 * $1 project, $2 from, $3 to, $4/$5 the ranges read from the rollup's hour and day rows (the tail
 * among the hours when its row is read), $6 all of the rolled-up time, where the unfolded records
 * and the closeouts of governed calls' permits are added to the rollup's rows, $7 (`withRaw`) the
 * ranges read from the permits (governed calls' permits). The permits the fold never sees are read
 * over [$2, $3) through `perRange` too: given the window's bounds as constants, the planner takes
 * the clauses of `UNFOLDED_PERMIT_SQL` as independent, expects a large share of a big project's
 * permits behind them, and scans every partition instead of `permits_unfolded_issued_idx`.
 */
const usageSql = (withRaw: boolean) => `
  WITH unfolded AS (${UNFOLDED_RECORDS_SQL}),
  raw AS (${
    withRaw
      ? `
    SELECT p.* FROM ${perRange('$7', `SELECT ${PERMIT_COLUMNS} FROM permits p
     WHERE p.project_id = $1 AND p.issued_at >= greatest(lower(r), $2::timestamptz) - interval '2 days' AND p.issued_at < upper(r)
       AND ${FOLDED_PERMIT_SQL} AND p.reservation_state = 'settled' AND p.settled_at >= lower(r) AND p.settled_at < upper(r)`)} AS p
    UNION ALL`
      : ''
  }
    SELECT p.* FROM ${perRange('tstzmultirange(tstzrange($2, $3))', `SELECT ${PERMIT_COLUMNS} FROM permits p
     WHERE p.project_id = $1 AND ${UNFOLDED_PERMIT_SQL} AND p.issued_at >= lower(r) - interval '2 days' AND p.issued_at < upper(r)
       AND p.reservation_state = 'settled' AND p.settled_at >= lower(r) AND p.settled_at < upper(r)`)} AS p
    UNION ALL
    SELECT ${PERMIT_COLUMNS}
      FROM unfolded u JOIN calls x ON x.id = u.id AND x.project_id = $1
     CROSS JOIN LATERAL (SELECT * FROM permits p WHERE p.id = x.permit_id LIMIT 1) p
     WHERE p.project_id = $1 AND ${FOLDED_PERMIT_SQL} AND p.reservation_state = 'settled' AND p.settled_at = x.recorded_at
       AND p.settled_at <@ $6::tstzmultirange AND p.issued_at >= $2::timestamptz - interval '2 days'
    UNION ALL
    SELECT ${PERMIT_COLUMNS}
      FROM permit_usage_reports u
     CROSS JOIN LATERAL (SELECT * FROM permits p WHERE p.id = u.permit_id LIMIT 1) p
     WHERE u.project_id = $1 AND u.reported_at >= $2 AND p.project_id = $1 AND ${FOLDED_PERMIT_SQL}
       AND p.reservation_state = 'settled' AND p.settled_at <@ $6::tstzmultirange AND p.issued_at >= $2::timestamptz - interval '2 days'
       AND NOT EXISTS (SELECT 1 FROM calls x WHERE x.permit_id = p.id AND x.project_id = $1 AND x.recorded_at = p.settled_at)
  ),
  rows AS (
    SELECT to_char(settled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, provider, model, key_id,
           1 AS requests, coalesce(actual_input_tokens, 0) AS input_tokens, coalesce(actual_output_tokens, 0) AS output_tokens, coalesce(actual_cost_micros, 0) AS cost
      FROM raw
    UNION ALL
    SELECT to_char(c.start AT TIME ZONE 'UTC', 'YYYY-MM-DD'), c.provider, c.model, c.key_id, c.requests, c.input_tokens, c.output_tokens, c.cost_usd_micros
      FROM ${rollupRows('$4', 3600)}
    UNION ALL
    SELECT to_char(c.start AT TIME ZONE 'UTC', 'YYYY-MM-DD'), c.provider, c.model, c.key_id, c.requests, c.input_tokens, c.output_tokens, c.cost_usd_micros
      FROM ${rollupRows('$5', 86400)}
  )
  SELECT day, provider, model, key_id AS api_key_id, sum(requests)::int AS requests, sum(input_tokens)::bigint AS input_tokens,
         sum(output_tokens)::bigint AS output_tokens, sum(cost)::bigint AS cost_usd_micros
    FROM rows
   GROUP BY 1, 2, 3, 4
   ORDER BY 1, 2, 3, 4`;
/** Without the ranges read from the permits (the Spend page's month): a branch fewer over every partition to plan. */
const USAGE_SQL = { withRaw: usageSql(true), withoutRaw: usageSql(false) };

/**
 * Settled permits in [from, to) by day (UTC), provider, model and API key. `untilNow`: the window
 * ends when it is read, at the later of `to` and the database's clock; the answer says where.
 */
export async function settledUsage(db: Db, projectId: string, window: { from: Date; to: Date; untilNow?: boolean }): Promise<{ to: Date; rows: UsageRow[] }> {
  const { from } = window;
  let to = window.to;
  // One snapshot for both statements, taken by the first before it reads the clock: every permit
  // the snapshot sees was settled before `now` (see the comment at the top).
  const rows = await withTransaction(db, async (client) => {
    const { rows: head } = await client.query<{ now: Date; started_at: Date | null }>(
      'SELECT clock_timestamp() AS now, (SELECT started_at FROM usage_rollup_starts WHERE project_id = $1) AS started_at',
      [projectId],
    );
    const now = head[0].now;
    if (window.untilNow && now > to) to = now;
    const plan = planUsage(from.getTime(), to.getTime(), head[0].started_at?.getTime() ?? null);
    const live = to.getTime() >= now.getTime();
    const raw = live ? plan.raw : [...plan.raw, ...plan.tail];
    const hours = live ? [...plan.hours, ...plan.tail] : plan.hours;
    const rolled = [...hours, ...plan.days].sort((a, b) => a[0] - b[0]);
    const params = [projectId, from, to, multirange(hours), multirange(plan.days), multirange(rolled)];
    const { rows } = await client.query<UsageRow>(raw.length > 0 ? USAGE_SQL.withRaw : USAGE_SQL.withoutRaw, raw.length > 0 ? [...params, multirange(raw)] : params);
    return rows;
  }, SNAPSHOT_READ_WITHOUT_JIT);
  return { to, rows: rows.map((r) => ({ ...r, input_tokens: Number(r.input_tokens), output_tokens: Number(r.output_tokens), cost_usd_micros: Number(r.cost_usd_micros) })) };
}
