/**
 * The Governance page's aggregates: a window's governance decisions by decision and reason code,
 * and the firewall's actions by action and category, read from the permits (every decision has
 * one). Counts only: a permit stores the categories the firewall found, never the text it read.
 */
import type { Queryable } from '../pool';

export type FirewallAction = 'blocked' | 'redacted' | 'flagged';
export type PermitDecisionKind = 'allow' | 'deny' | 'review' | 'throttle';

export interface GovernanceMetrics {
  totals: { decisions: number } & Record<PermitDecisionKind, number>;
  decisions: { decision: PermitDecisionKind; reason_code: string; count: number }[];
  firewall: { action: FirewallAction; category: string; count: number }[];
}

/**
 * One range scan of `permits_project_issued_idx` (project_id, issued_at DESC, id DESC) bounded by
 * the window, so the cost follows the decisions in the window, not the table. The scanned rows are
 * materialised once (the CTE is read twice) and grouped two ways.
 *
 * Firewall actions from the stored outcome (src/governance/evaluate.ts): `block` mode blocked its
 * categories; `allow` mode redacted some and flagged others; `monitor` mode only flagged (the same
 * reading as the usage report's firewall outcomes). A decision counts once per category it names.
 */
export async function governanceMetrics(db: Queryable, projectId: string, from: Date, to: Date): Promise<GovernanceMetrics> {
  const { rows } = await db.query<{ kind: 'decision' | 'firewall'; a: string; b: string; n: number }>(
    `WITH w AS (
       SELECT decision, reason_code, metadata->'decision_metadata'->'firewall' AS fw
         FROM permits
        WHERE project_id = $1 AND issued_at >= $2 AND issued_at < $3
     )
     SELECT 'decision' AS kind, decision AS a, reason_code AS b, count(*)::int AS n
       FROM w GROUP BY decision, reason_code
     UNION ALL
     SELECT 'firewall', x.action, x.category, count(*)::int
       FROM w CROSS JOIN LATERAL (
         SELECT 'blocked', c FROM jsonb_array_elements_text(CASE WHEN w.fw->>'mode' = 'block' THEN w.fw->'categories' ELSE '[]'::jsonb END) AS c
         UNION ALL
         SELECT 'redacted', c FROM jsonb_array_elements_text(CASE WHEN w.fw->>'mode' = 'allow' THEN coalesce(w.fw->'redacted', '[]'::jsonb) ELSE '[]'::jsonb END) AS c
         UNION ALL
         SELECT 'flagged', c FROM jsonb_array_elements_text(CASE w.fw->>'mode'
                                                             WHEN 'allow' THEN coalesce(w.fw->'flagged', '[]'::jsonb)
                                                             WHEN 'monitor' THEN coalesce(w.fw->'categories', '[]'::jsonb)
                                                             ELSE '[]'::jsonb END) AS c
       ) AS x(action, category)
      WHERE w.fw IS NOT NULL AND jsonb_typeof(w.fw) = 'object'
      GROUP BY x.action, x.category
     ORDER BY n DESC, a, b`,
    [projectId, from, to],
  );
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
