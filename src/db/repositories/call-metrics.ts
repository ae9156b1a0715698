/**
 * The Overview's aggregates (`GET /v1/metrics/calls`) over `[from, to)`: whole minutes and hours
 * from the call rollup (src/db/repositories/call-rollup.ts), the rest from the call records: the
 * sub-minute edges of the window, a minute that straddles a bucket boundary, the time before the
 * project's rollup started, and records the sequencer has not folded yet. One statement, so the
 * rollup and the unfolded records are read in one snapshot.
 */
import { READ_WITHOUT_JIT, withTransaction, type Db } from '../pool';
import { addToHistogram, histogramPercentile, LATENCY_BOUNDS, type LatencyHistogram } from '../latency-histogram';
import { rollupStart, UNFOLDED_RECORDS_SQL } from './call-rollup';

export interface CallMetricsBucket {
  start: string;
  completed: number;
  failed: number;
  denied: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

export interface CallMetrics {
  series: CallMetricsBucket[];
  totals: {
    calls: number;
    completed: number;
    failed: number;
    denied: number;
    error_rate: number;
    denial_rate: number;
    p50_ms: number | null;
    p95_ms: number | null;
    cost_usd_micros: number;
  };
  by_model: { provider: string; model: string | null; calls: number; cost_usd_micros: number }[];
  by_key: { key_id: string | null; calls: number; cost_usd_micros: number }[];
}

const MINUTE = 60_000;
const HOUR = 3_600_000;

export type Range = [number, number];

/** Where each part of a window is read from: ranges of epoch milliseconds, in order. */
export interface MetricsPlan {
  /** From the records, for the series and for spend: sub-minute edges, time before the rollup's start. */
  raw: Range[];
  /** From the records, for the series only: the minutes that hold a bucket boundary. */
  rawSeries: Range[];
  /** From the rollup's minute and hour rows, for the series (each row inside one bucket). */
  statusMinutes: Range[];
  statusHours: Range[];
  /** From the rollup's minute and hour rows, for spend by model and key (the window's totals only). */
  spendMinutes: Range[];
  spendHours: Range[];
}

function push(list: Range[], a: number, b: number): void {
  if (a >= b) return;
  const last = list[list.length - 1];
  if (last && last[1] === a) last[1] = b;
  else list.push([a, b]);
}

const floorTo = (t: number, unit: number) => Math.floor(t / unit) * unit;
const ceilTo = (t: number, unit: number) => Math.ceil(t / unit) * unit;

/** Splits [a, b) into whole hours, whole minutes around them, and sub-minute edges. */
function split(a: number, b: number, into: { raw: Range[]; minutes: Range[]; hours: Range[] }): void {
  const { raw, minutes, hours } = into;
  const m0 = ceilTo(a, MINUTE);
  const m1 = floorTo(b, MINUTE);
  if (m0 >= m1) {
    push(raw, a, b);
    return;
  }
  push(raw, a, m0);
  const h0 = ceilTo(m0, HOUR);
  const h1 = floorTo(m1, HOUR);
  if (h0 < h1) {
    push(minutes, m0, h0);
    push(hours, h0, h1);
    push(minutes, h1, m1);
  } else {
    push(minutes, m0, m1);
  }
  push(raw, m1, b);
}

/**
 * A window without buckets, for a rollup whose start is `rolledFrom`: its whole hours, the whole
 * minutes around them, and (`raw`) its sub-minute edges and the time before the start.
 */
export function planWindow(from: number, to: number, rolledFrom: number | null): { raw: Range[]; minutes: Range[]; hours: Range[] } {
  const plan = { raw: [] as Range[], minutes: [] as Range[], hours: [] as Range[] };
  const start = Math.min(to, Math.max(from, rolledFrom ?? from));
  push(plan.raw, from, start);
  split(start, to, plan);
  return plan;
}

/**
 * The plan for a window. Spend has no buckets: the window's whole hours and minutes from the
 * rollup (from the project's rollup start `rolledFrom` on), its sub-minute edges and the time
 * before the start from the records. The series reads the same rolled-up time cut at its bucket
 * boundaries, so that a period never straddles two buckets: a minute that holds a boundary comes
 * from the records (for the series only).
 */
export function planMetrics(from: number, to: number, bucketMs: number, rolledFrom: number | null): MetricsPlan {
  const whole = planWindow(from, to, rolledFrom);
  const plan: MetricsPlan = { raw: whole.raw, rawSeries: [], statusMinutes: [], statusHours: [], spendMinutes: whole.minutes, spendHours: whole.hours };
  const rolled: Range[] = [];
  for (const [a, b] of [...plan.spendMinutes, ...plan.spendHours].sort((x, y) => x[0] - y[0])) push(rolled, a, b);
  for (const [a, b] of rolled) {
    for (let k = Math.floor((a - from) / bucketMs); from + k * bucketMs < b; k++) {
      const pa = Math.max(a, from + k * bucketMs);
      const pb = Math.min(b, from + (k + 1) * bucketMs);
      if (pa < pb) split(pa, pb, { raw: plan.rawSeries, minutes: plan.statusMinutes, hours: plan.statusHours });
    }
  }
  return plan;
}

/** PostgreSQL's text of a tstzmultirange. */
export function multirange(ranges: Range[]): string {
  return `{${ranges.map(([a, b]) => `[${new Date(a).toISOString()},${new Date(b).toISOString()})`).join(',')}}`;
}

type Row = {
  kind: 'status' | 'latency' | 'model' | 'key';
  bucket: Date | null;
  status: string | null;
  provider: string | null;
  model: string | null;
  key_id: string | null;
  n: number;
  cost: string | null;
  lb: number | null;
};

const RECORD_COLUMNS = 'x.created_at, x.status, x.provider, x.model, x.key_id, x.cost_usd_micros, x.duration_ms';
const ROLLUP_COLUMNS = 'c.dimension, c.start, c.status, c.provider, c.model, c.key_id, c.calls, c.cost_usd_micros, c.latency';
/**
 * Rows of each range of a multirange parameter, read by one index range scan per range: the
 * subquery is LATERAL and kept apart (OFFSET 0), so the planner cannot turn it into a join that
 * reads every row of the project and filters them against the ranges (it guesses 100 ranges where
 * there are none to a few).
 */
export const perRange = (ranges: string, select: string) => `unnest(${ranges}::tstzmultirange) AS r CROSS JOIN LATERAL (${select} OFFSET 0)`;
const rollupRows = (ranges: string, width: number, dimensions: string) =>
  `SELECT ${ROLLUP_COLUMNS} FROM ${perRange(ranges, `SELECT ${ROLLUP_COLUMNS} FROM call_rollup c
     WHERE c.project_id = $1 AND c.width = ${width} AND c.dimension IN (${dimensions}) AND c.start >= lower(r) AND c.start < upper(r)`)} AS c`;
const recordRows = (ranges: string) =>
  `${perRange(ranges, `SELECT ${RECORD_COLUMNS} FROM calls x WHERE x.project_id = $1 AND x.created_at >= lower(r) AND x.created_at < upper(r)`)} AS x`;

/**
 * The statement. $1 project, $2 bucket origin, $3 bucket seconds, $4 record ranges for both,
 * $5 record ranges for the series only, $6 the rolled-up time (where unfolded records count),
 * $7/$8 series minute/hour ranges, $9/$10 spend minute/hour ranges, $11 the histogram's bounds.
 * Summed here: counts and cost per bucket and status, latency counts per bucket and histogram
 * bucket, calls and cost per model and per key.
 */
const METRICS_SQL = `
  WITH unfolded AS (${UNFOLDED_RECORDS_SQL}),
  rec AS (
    SELECT ${RECORD_COLUMNS}, true AS for_series, true AS for_spend
      FROM ${recordRows('$4')}
    UNION ALL
    SELECT ${RECORD_COLUMNS}, true, false
      FROM ${recordRows('$5')}
    UNION ALL
    SELECT ${RECORD_COLUMNS}, NOT (x.created_at <@ $5::tstzmultirange), true
      FROM unfolded u JOIN calls x ON x.id = u.id AND x.project_id = $1
     WHERE x.created_at <@ $6::tstzmultirange
  ),
  series AS (
    ${rollupRows('$7', 60, "'status'")}
    UNION ALL
    ${rollupRows('$8', 3600, "'status'")}
  ),
  spend AS (
    ${rollupRows('$9', 60, "'model', 'key'")}
    UNION ALL
    ${rollupRows('$10', 3600, "'model', 'key'")}
  )
  SELECT 'status' AS kind, bucket, status, NULL AS provider, NULL AS model, NULL AS key_id, sum(n)::int AS n, sum(cost)::text AS cost, NULL::int AS lb
    FROM (SELECT date_bin(make_interval(secs => $3), start, $2) AS bucket, status, calls AS n, cost_usd_micros AS cost FROM series
          UNION ALL
          SELECT date_bin(make_interval(secs => $3), created_at, $2), status, 1, cost_usd_micros FROM rec WHERE for_series) AS s
   GROUP BY bucket, status
  UNION ALL
  SELECT 'latency', bucket, NULL, NULL, NULL, NULL, sum(n)::int, NULL, lb
    FROM (SELECT date_bin(make_interval(secs => $3), start, $2) AS bucket, array_lower(latency, 1) + h.i::int - 1 AS lb, h.n
            FROM series CROSS JOIN LATERAL unnest(latency) WITH ORDINALITY AS h(n, i)
           WHERE latency IS NOT NULL
          UNION ALL
          SELECT date_bin(make_interval(secs => $3), created_at, $2), width_bucket(duration_ms, $11::int[]), 1
            FROM rec WHERE for_series AND status <> 'denied') AS l
   GROUP BY bucket, lb
  UNION ALL
  SELECT 'model', NULL, NULL, provider, model, NULL, sum(n)::int, sum(cost)::text, NULL
    FROM (SELECT provider, model, calls AS n, cost_usd_micros AS cost FROM spend WHERE dimension = 'model'
          UNION ALL
          SELECT provider, model, 1, cost_usd_micros FROM rec WHERE for_spend) AS m
   GROUP BY provider, model
  UNION ALL
  SELECT 'key', NULL, NULL, NULL, NULL, key_id, sum(n)::int, sum(cost)::text, NULL
    FROM (SELECT key_id, calls AS n, cost_usd_micros AS cost FROM spend WHERE dimension = 'key'
          UNION ALL
          SELECT key_id, 1, cost_usd_micros FROM rec WHERE for_spend) AS k
   GROUP BY key_id`;

const round = (v: number | null) => (v === null ? null : Math.round(v));

interface Tally {
  completed: number;
  failed: number;
  denied: number;
  cost: number;
  latency: LatencyHistogram;
}

const tally = (): Tally => ({ completed: 0, failed: 0, denied: 0, cost: 0, latency: new Map() });

/**
 * Latency percentiles leave denials out: a denied call never reached a provider, and its few
 * milliseconds would pull the percentiles down exactly when things go wrong. Percentiles come from
 * the summed histograms (src/db/latency-histogram.ts: within ±4.4 % of the exact value).
 */
export async function callMetrics(db: Db, projectId: string, window: { from: Date; to: Date; bucketSeconds: number }): Promise<CallMetrics> {
  const { from, to, bucketSeconds } = window;
  const rows = await withTransaction(db, async (client) => {
    const started = await rollupStart(client, projectId);
    const plan = planMetrics(from.getTime(), to.getTime(), bucketSeconds * 1000, started?.getTime() ?? null);
    const { rows } = await client.query<Row>(METRICS_SQL, [
      projectId,
      from,
      bucketSeconds,
      multirange(plan.raw),
      multirange(plan.rawSeries),
      multirange([...plan.spendMinutes, ...plan.spendHours].sort((a, b) => a[0] - b[0])),
      multirange(plan.statusMinutes),
      multirange(plan.statusHours),
      multirange(plan.spendMinutes),
      multirange(plan.spendHours),
      LATENCY_BOUNDS,
    ]);
    return rows;
  }, READ_WITHOUT_JIT);

  const buckets = new Map<number, Tally>();
  const total = tally();
  const models: CallMetrics['by_model'] = [];
  const keys: CallMetrics['by_key'] = [];
  const bucketOf = (at: Date) => {
    const t = new Date(at).getTime();
    let b = buckets.get(t);
    if (!b) buckets.set(t, (b = tally()));
    return b;
  };
  for (const r of rows) {
    const n = Number(r.n);
    const cost = Number(r.cost);
    if (r.kind === 'status') {
      const b = bucketOf(r.bucket!);
      for (const s of [b, total]) {
        if (r.status === 'completed') s.completed += n;
        else if (r.status === 'failed') s.failed += n;
        else s.denied += n;
        s.cost += cost;
      }
    } else if (r.kind === 'latency') {
      addToHistogram(bucketOf(r.bucket!).latency, r.lb!, n);
      addToHistogram(total.latency, r.lb!, n);
    } else if (r.kind === 'model') {
      // A call without a provider (a denial before routing) counts under its key only.
      if (r.provider === null || n === 0) continue;
      models.push({ provider: r.provider, model: r.model, calls: n, cost_usd_micros: cost });
    } else if (n > 0) {
      keys.push({ key_id: r.key_id, calls: n, cost_usd_micros: cost });
    }
  }

  // Every bucket of the window, empty ones as zeros, so a chart's time axis has no gaps.
  const series: CallMetricsBucket[] = [];
  for (let t = from.getTime(); t < to.getTime(); t += bucketSeconds * 1000) {
    const b = buckets.get(t);
    series.push({
      start: new Date(t).toISOString(),
      completed: b?.completed ?? 0,
      failed: b?.failed ?? 0,
      denied: b?.denied ?? 0,
      p50_ms: b ? round(histogramPercentile(b.latency, 0.5)) : null,
      p95_ms: b ? round(histogramPercentile(b.latency, 0.95)) : null,
    });
  }
  const calls = total.completed + total.failed + total.denied;
  const rate = (n: number) => (calls === 0 ? 0 : n / calls);
  const bySpend = <T extends { calls: number; cost_usd_micros: number }>(a: T, b: T) => b.cost_usd_micros - a.cost_usd_micros || b.calls - a.calls;
  return {
    series,
    totals: {
      calls,
      completed: total.completed,
      failed: total.failed,
      denied: total.denied,
      error_rate: rate(total.failed),
      denial_rate: rate(total.denied),
      p50_ms: round(histogramPercentile(total.latency, 0.5)),
      p95_ms: round(histogramPercentile(total.latency, 0.95)),
      cost_usd_micros: total.cost,
    },
    by_model: models.sort((a, b) => bySpend(a, b) || a.provider.localeCompare(b.provider) || (a.model ?? '').localeCompare(b.model ?? '')),
    by_key: keys.sort((a, b) => bySpend(a, b) || (a.key_id ?? '').localeCompare(b.key_id ?? '')),
  };
}
