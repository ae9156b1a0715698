/**
 * The Governance page's aggregates: a window's governance decisions by decision and reason code,
 * and the firewall's actions by action and category. Counts only: a permit stores the categories
 * the firewall found, never the text it read.
 *
 * Whole minutes and hours from the governance rollup (src/db/repositories/governance-rollup.ts),
 * the rest from the permits: the window's sub-minute edges and the time before the project's
 * rollup start (every permit there), and in the rolled-up time the permits the fold never sees
 * (`permits_unfolded_issued_idx`), those whose record the sequencer has not folded yet, and those
 * of calls still in flight (no record yet: `closing` set). One statement, so the rollup and the
 * unfolded records are read in one snapshot. A denied call's permit counts from the moment its
 * record is written (the same statement batch, milliseconds later).
 */
import { READ_WITHOUT_JIT, withTransaction, type Db } from '../pool';
import { multirange, perRange, planWindow } from './call-metrics';
import { UNFOLDED_RECORDS_SQL } from './call-rollup';
import { FOLDED_PERMIT_SQL, governanceRollupStart, UNFOLDED_PERMIT_SQL } from './governance-rollup';

export type FirewallAction = 'blocked' | 'redacted' | 'flagged';
export type PermitDecisionKind = 'allow' | 'deny' | 'review' | 'throttle';

export interface GovernanceMetrics {
  totals: { decisions: number } & Record<PermitDecisionKind, number>;
  decisions: { decision: PermitDecisionKind; reason_code: string; count: number }[];
  firewall: { action: FirewallAction; category: string; count: number }[];
}

const PERMIT_COLUMNS = "p.decision, p.reason_code, p.metadata->'decision_metadata'->'firewall' AS fw";
const rollupRows = (ranges: string, width: number) =>
  `SELECT g.dimension, g.decision, g.reason_code, g.action, g.category, g.permits FROM ${perRange(ranges, `SELECT * FROM governance_rollup g
     WHERE g.project_id = $1 AND g.width = ${width} AND g.start >= lower(r) AND g.start < upper(r)`)} AS g`;
/** The permits issued in each range of a multirange parameter (`perRange`: an index range scan per range). */
const permitRows = (ranges: string, where: string) =>
  `SELECT p.* FROM ${perRange(ranges, `SELECT ${PERMIT_COLUMNS} FROM permits p WHERE p.project_id = $1 AND p.issued_at >= lower(r) AND p.issued_at < upper(r)${where}`)} AS p`;

/**
 * $1 project, $2 ranges read from the permits alone, $3 the rolled-up time, $4/$5 its minute and
 * hour ranges. `raw` is one row per permit read from the permits, `rolled` the rollup's rows; the
 * firewall's actions of a raw permit come from the function the fold uses
 * (tollgate_firewall_actions), so both read a stored outcome the same way. In-flight permits are
 * found by `permits_in_flight_idx` (a few per process at a time), not by scanning the window.
 */
const GOVERNANCE_SQL = `
  WITH unfolded AS (${UNFOLDED_RECORDS_SQL}),
  raw AS (
    ${permitRows('$2', '')}
    UNION ALL
    ${permitRows('$3', ` AND ${UNFOLDED_PERMIT_SQL}`)}
    UNION ALL
    SELECT ${PERMIT_COLUMNS}
      FROM unfolded u JOIN calls x ON x.id = u.id AND x.project_id = $1
     CROSS JOIN LATERAL (SELECT * FROM permits p WHERE p.id = x.permit_id LIMIT 1) p
     WHERE p.project_id = $1 AND ${FOLDED_PERMIT_SQL} AND p.issued_at <@ $3::tstzmultirange
    UNION ALL
    SELECT ${PERMIT_COLUMNS}
      FROM permits p
     WHERE p.closing IS NOT NULL AND p.dispatch_deadline > '-infinity' AND p.project_id = $1 AND ${FOLDED_PERMIT_SQL} AND p.issued_at <@ $3::tstzmultirange
  ),
  rolled AS (
    ${rollupRows('$4', 60)}
    UNION ALL
    ${rollupRows('$5', 3600)}
  )
  SELECT 'decision' AS kind, a, b, sum(n)::int AS n
    FROM (SELECT decision AS a, reason_code AS b, 1 AS n FROM raw
          UNION ALL
          SELECT decision, reason_code, permits FROM rolled WHERE dimension = 'decision') AS d
   GROUP BY a, b
  UNION ALL
  SELECT 'firewall', a, b, sum(n)::int
    FROM (SELECT f.action AS a, f.category AS b, 1 AS n FROM raw CROSS JOIN LATERAL tollgate_firewall_actions(raw.fw) AS f WHERE raw.fw IS NOT NULL
          UNION ALL
          SELECT action, category, permits FROM rolled WHERE dimension = 'firewall') AS f
   GROUP BY a, b
  ORDER BY n DESC, a, b`;

export async function governanceMetrics(db: Db, projectId: string, from: Date, to: Date): Promise<GovernanceMetrics> {
  // One snapshot for the start and the statement.
  const rows = await withTransaction(db, async (client) => {
    const started = await governanceRollupStart(client, projectId);
    const plan = planWindow(from.getTime(), to.getTime(), started?.getTime() ?? null);
    const rolled = [...plan.minutes, ...plan.hours].sort((a, b) => a[0] - b[0]);
    const { rows } = await client.query<{ kind: 'decision' | 'firewall'; a: string; b: string; n: number }>(GOVERNANCE_SQL, [projectId, multirange(plan.raw), multirange(rolled), multirange(plan.minutes), multirange(plan.hours)]);
    return rows;
  }, READ_WITHOUT_JIT);
  const totals = { decisions: 0, allow: 0, deny: 0, review: 0, throttle: 0 };
  const decisions: GovernanceMetrics['decisions'] = [];
  const firewall: GovernanceMetrics['firewall'] = [];
  for (const r of rows) {
    const n = Number(r.n);
    if (r.kind === 'decision') {
      const decision = r.a as PermitDecisionKind;
      decisions.push({ decision, reason_code: r.b, count: n });
      totals.decisions += n;
      totals[decision] += n;
    } else {
      firewall.push({ action: r.a as FirewallAction, category: r.b, count: n });
    }
  }
  return { totals, decisions, firewall };
}
