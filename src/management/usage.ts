/**
 * The money of a project as the management API shows it: usage over a window (JSON or CSV) and the
 * month-end cost forecast against the policy's caps (docs/decisions/usage-and-forecast.md).
 */
import type { Db } from '../db/pool';
import { errors } from '../errors';
import { getPolicy } from '../db/repositories/policies';
import { activeIntentProjections, dailySettled, firewallOutcomes } from '../db/repositories/usage';
import { settledUsage, type UsageRow } from '../db/repositories/settled-usage';

const DAY_MS = 86_400_000;
/** The longest usage window one request may ask for. */
export const MAX_USAGE_WINDOW_DAYS = 366;

export interface UsageReport {
  object: 'usage';
  project_id: string;
  from: string;
  to: string;
  data: UsageRow[];
  totals: { requests: number; input_tokens: number; output_tokens: number; cost_usd_micros: number };
}

/** A report window [from, to): the default is the current UTC month up to now; at most MAX_USAGE_WINDOW_DAYS. */
function reportWindow(window: { from?: Date; to?: Date }, now: Date): { from: Date; to: Date } {
  const from = window.from ?? new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const to = window.to ?? now;
  if (to.getTime() <= from.getTime()) throw errors.validation([{ path: 'to', message: 'to must be after from', code: 'custom' }]);
  if (to.getTime() - from.getTime() > MAX_USAGE_WINDOW_DAYS * DAY_MS) {
    throw errors.validation([{ path: 'from', message: `the window may span at most ${MAX_USAGE_WINDOW_DAYS} days`, code: 'custom' }]);
  }
  return { from, to };
}

/** Usage in [from, to); without `to`, up to the moment it is read (the database's clock, when later than `now`). */
export async function usageReport(db: Db, projectId: string, window: { from?: Date; to?: Date }, now: Date): Promise<UsageReport> {
  const { from, to: until } = reportWindow(window, now);
  const { to, rows: data } = await settledUsage(db, projectId, { from, to: until, untilNow: window.to === undefined });
  const totals = data.reduce(
    (t, r) => ({
      requests: t.requests + r.requests,
      input_tokens: t.input_tokens + r.input_tokens,
      output_tokens: t.output_tokens + r.output_tokens,
      cost_usd_micros: t.cost_usd_micros + r.cost_usd_micros,
    }),
    { requests: 0, input_tokens: 0, output_tokens: 0, cost_usd_micros: 0 },
  );
  return { object: 'usage', project_id: projectId, from: from.toISOString(), to: to.toISOString(), data, totals };
}

const CSV_COLUMNS: (keyof UsageRow)[] = ['day', 'provider', 'model', 'api_key_id', 'requests', 'input_tokens', 'output_tokens', 'cost_usd_micros'];

/** RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled. */
function csvField(v: string | number | null): string {
  const s = v === null ? '' : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function usageCsv(report: UsageReport): string {
  const lines = [CSV_COLUMNS.join(','), ...report.data.map((r) => CSV_COLUMNS.map((c) => csvField(r[c])).join(','))];
  return lines.join('\r\n') + '\r\n';
}

/**
 * Month-end projection, method `linear_run_rate`: the month's settled spend so far divided by the
 * days elapsed (today counted as a whole day), times the days of the month. Active intents
 * add the part of their declared projection they have not used yet (projected cost × calls left /
 * calls declared), shown apart and in the total.
 */
export async function costForecast(db: Db, projectId: string, now: Date) {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const monthStart = new Date(Date.UTC(y, m, 1));
  const daysInMonth = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  const daysElapsed = now.getUTCDate();
  const day = (d: Date) => d.toISOString().slice(0, 10);
  const [days, intents, policy] = await Promise.all([
    dailySettled(db, projectId, day(monthStart), day(now)),
    activeIntentProjections(db, projectId),
    getPolicy(db, projectId),
  ]);
  const monthToDate = days.reduce((s, d) => s + d.settled_usd_micros, 0);
  const reservedNow = days.reduce((s, d) => s + d.reserved_usd_micros, 0);
  const runRate = Math.round((monthToDate / daysElapsed) * daysInMonth);
  const intentRows = intents.map((i) => {
    const declared = i.expected_calls ?? i.max_calls ?? 0;
    const left = declared > 0 ? Math.max(0, declared - i.actual_calls) / declared : 0;
    return { workflow_id: i.workflow_id, projected_cost_usd_micros: i.projected_usd_micros, actual_calls: i.actual_calls, remaining_projected_usd_micros: Math.round(i.projected_usd_micros * left) };
  });
  const intentsRemaining = intentRows.reduce((s, i) => s + i.remaining_projected_usd_micros, 0);
  const projected = runRate + intentsRemaining;
  const budgets = policy.document.budgets;
  const today = days.find((d) => d.day === day(now));
  return {
    object: 'cost_forecast',
    project_id: projectId,
    month: day(monthStart).slice(0, 7),
    as_of: now.toISOString(),
    method: 'linear_run_rate',
    days_elapsed: daysElapsed,
    days_in_month: daysInMonth,
    month_to_date_usd_micros: monthToDate,
    reserved_now_usd_micros: reservedNow,
    run_rate_projection_usd_micros: runRate,
    workflow_intents: { active: intentRows.length, remaining_projected_usd_micros: intentsRemaining, data: intentRows },
    projected_month_end_usd_micros: projected,
    daily: days,
    caps: {
      monthly_usd_micros: budgets.monthly_usd_micros,
      daily_usd_micros: budgets.daily_usd_micros,
      projected_over_monthly_cap: budgets.monthly_usd_micros !== null && projected > budgets.monthly_usd_micros,
      today_settled_usd_micros: today?.settled_usd_micros ?? 0,
    },
  };
}

/**
 * GET /v1/projects/{id}/prompt-analytics: firewall inspections per model and blocks or monitor-mode
 * flags per category and model in [from, to). Counts from the stored decisions, never prompt text.
 */
export async function promptAnalytics(db: Db, projectId: string, window: { from?: Date; to?: Date }, now: Date) {
  const { from, to } = reportWindow(window, now);
  const { byModel, byCategory } = await firewallOutcomes(db, projectId, from, to);
  const sum = (k: 'inspected' | 'blocked' | 'flagged') => byModel.reduce((s, r) => s + r[k], 0);
  return {
    object: 'prompt_analytics',
    project_id: projectId,
    from: from.toISOString(),
    to: to.toISOString(),
    totals: { inspected: sum('inspected'), blocked: sum('blocked'), flagged: sum('flagged') },
    by_model: byModel,
    by_category: byCategory,
  };
}
