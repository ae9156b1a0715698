/**
 * The Overview's aggregates (`GET /v1/metrics/calls`) over `[from, to)`: whole minutes and hours
 * from the call rollup (src/db/repositories/call-rollup.ts), the rest from the call records: the
 * sub-minute edges of the window, a minute that straddles a bucket boundary, the time before the
 * project's rollup started, and records the sequencer has not folded yet. One statement, so the
 * rollup and the unfolded records are read in one snapshot.
 */
import type { Db } from '../pool';
import { addStoredHistogram, addToHistogram, histogramPercentile, LATENCY_BOUNDS, type LatencyHistogram } from '../latency-histogram';
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

type Range = [number, number];

/** Where each part of a window is read from: ranges of epoch milliseconds, in order. */
export interface MetricsPlan {
  /** From the records. */
  raw: Range[];
  /** From the rollup's minute and hour rows, for the status series (each row inside one bucket). */
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
function split(a: number, b: number, raw: Range[], minutes: Range[], hours: Range[]): void {
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
 * The plan for a window: per bucket, the whole hours and minutes inside it from the rollup (a
 * period never straddles a bucket boundary, so it adds to one bucket), the rest from the records;
 * before `rolledFrom` (the project's rollup start) everything from the records. Spend has no
 * buckets: the same rolled-up time, split into as many whole hours as it holds.
 */
export function planMetrics(from: number, to: number, bucketMs: number, rolledFrom: number | null): MetricsPlan {
  const plan: MetricsPlan = { raw: [], statusMinutes: [], statusHours: [], spendMinutes: [], spendHours: [] };
  const start = Math.min(to, Math.max(from, rolledFrom ?? from));
  push(plan.raw, from, start);
  for (let b = from; b < to; b += bucketMs) {
    const a = Math.max(b, start);
    const e = Math.min(b + bucketMs, to);
    if (a < e) split(a, e, plan.raw, plan.statusMinutes, plan.statusHours);
  }
  // The rolled-up time is whole minutes: merged, it splits with no raw remainder.
  const rolled: Range[] = [];
  for (const [a, b] of [...plan.statusMinutes, ...plan.statusHours].sort((x, y) => x[0] - y[0])) push(rolled, a, b);
  for (const [a, b] of rolled) split(a, b, plan.raw, plan.spendMinutes, plan.spendHours);
  return plan;
}

/** PostgreSQL's text of a tstzmultirange. */
function multirange(ranges: Range[]): string {
  return `{${ranges.map(([a, b]) => `[${new Date(a).toISOString()},${new Date(b).toISOString()})`).join(',')}}`;
}

type Row = {
  kind: 'status' | 'model' | 'key';
  bucket: Date | null;
  status: string | null;
  provider: string | null;
  model: string | null;
  key_id: string | null;
  n: number;
  cost: string;
  lat_first: number | null;
  lat: number[] | null;
  lb: number | null;
};

/**
 * The statement. $1 project, $2 bucket origin, $3 bucket seconds, $4 raw ranges, $5 the rolled-up
 * ranges (for unfolded records), $6/$7 status minute/hour ranges, $8/$9 spend minute/hour ranges,
 * $10 the histogram's bounds. Record rows come grouped by bucket, status and latency bucket (the
 * histogram is built here from those), by model, and by key; rollup rows as stored.
 */
const METRICS_SQL = `
  WITH unfolded AS (${UNFOLDED_RECORDS_SQL}),
  rec AS (
    SELECT x.created_at, x.status, x.provider, x.model, x.key_id, x.cost_usd_micros, x.duration_ms
      FROM unnest($4::tstzmultirange) AS r
      JOIN executions x ON x.project_id = $1 AND x.created_at >= lower(r) AND x.created_at < upper(r)
    UNION ALL
    SELECT x.created_at, x.status, x.provider, x.model, x.key_id, x.cost_usd_micros, x.duration_ms
      FROM unfolded u JOIN executions x ON x.id = u.id AND x.project_id = $1
     WHERE x.created_at <@ $5::tstzmultirange
  ),
  rolled AS (
    SELECT c.* FROM unnest($6::tstzmultirange) AS r
      JOIN call_rollup c ON c.project_id = $1 AND c.width = 60 AND c.dimension = 'status' AND c.start >= lower(r) AND c.start < upper(r)
    UNION ALL
    SELECT c.* FROM unnest($7::tstzmultirange) AS r
      JOIN call_rollup c ON c.project_id = $1 AND c.width = 3600 AND c.dimension = 'status' AND c.start >= lower(r) AND c.start < upper(r)
    UNION ALL
    SELECT c.* FROM unnest($8::tstzmultirange) AS r
      JOIN call_rollup c ON c.project_id = $1 AND c.width = 60 AND c.dimension IN ('model', 'key') AND c.start >= lower(r) AND c.start < upper(r)
    UNION ALL
    SELECT c.* FROM unnest($9::tstzmultirange) AS r
      JOIN call_rollup c ON c.project_id = $1 AND c.width = 3600 AND c.dimension IN ('model', 'key') AND c.start >= lower(r) AND c.start < upper(r)
  )
  SELECT dimension AS kind, date_bin(make_interval(secs => $3), start, $2) AS bucket, status, provider, model, key_id,
         calls AS n, cost_usd_micros::text AS cost, array_lower(latency, 1) AS lat_first, latency[:] AS lat, NULL::int AS lb
    FROM rolled
  UNION ALL
  SELECT 'status', date_bin(make_interval(secs => $3), created_at, $2), status, NULL, NULL, NULL,
         count(*)::int, sum(cost_usd_micros)::text, NULL, NULL,
         CASE WHEN status <> 'denied' THEN width_bucket(duration_ms, $10::int[]) END
    FROM rec GROUP BY 2, 3, 11
  UNION ALL
  SELECT 'model', NULL, NULL, provider, model, NULL, count(*)::int, sum(cost_usd_micros)::text, NULL, NULL, NULL
    FROM rec GROUP BY provider, model
  UNION ALL
  SELECT 'key', NULL, NULL, NULL, NULL, key_id, count(*)::int, sum(cost_usd_micros)::text, NULL, NULL, NULL
    FROM rec GROUP BY key_id`;

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
export async function callMetrics(db: Db, projectId: string, from: Date, to: Date, bucketSeconds: number): Promise<CallMetrics> {
  const client = await db.connect();
  let rows: Row[];
  try {
    // Without JIT: the planner's estimates for the range joins are loose, so the statement's cost
    // passes jit_above_cost, and compiling its expressions took ~0.5 s against ~10 ms of execution.
    await client.query('BEGIN READ ONLY; SET LOCAL jit = off');
    const started = await rollupStart(client, projectId);
    const plan = planMetrics(from.getTime(), to.getTime(), bucketSeconds * 1000, started?.getTime() ?? null);
    const rolled = [...plan.statusMinutes, ...plan.statusHours];
    ({ rows } = await client.query<Row>(METRICS_SQL, [
      projectId,
      from,
      bucketSeconds,
      multirange(plan.raw),
      multirange(rolled),
      multirange(plan.statusMinutes),
      multirange(plan.statusHours),
      multirange(plan.spendMinutes),
      multirange(plan.spendHours),
      LATENCY_BOUNDS,
    ]));
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }

  const buckets = new Map<number, Tally>();
  const total = tally();
  const models = new Map<string, { provider: string; model: string | null; calls: number; cost_usd_micros: number }>();
  const keys = new Map<string | null, { key_id: string | null; calls: number; cost_usd_micros: number }>();
  for (const r of rows) {
    const n = Number(r.n);
    const cost = Number(r.cost);
    if (r.kind === 'status') {
      const t = new Date(r.bucket!).getTime();
      let b = buckets.get(t);
      if (!b) buckets.set(t, (b = tally()));
      for (const s of [b, total]) {
        if (r.status === 'completed') s.completed += n;
        else if (r.status === 'failed') s.failed += n;
        else s.denied += n;
        s.cost += cost;
        if (r.lat) addStoredHistogram(s.latency, r.lat_first!, r.lat);
        else if (r.lb !== null) addToHistogram(s.latency, r.lb, n);
      }
    } else if (r.kind === 'model') {
      // A call without a provider (a denial before routing) counts under its key only.
      if (r.provider === null) continue;
      const k = JSON.stringify([r.provider, r.model]);
      const m = models.get(k) ?? { provider: r.provider, model: r.model, calls: 0, cost_usd_micros: 0 };
      m.calls += n;
      m.cost_usd_micros += cost;
      models.set(k, m);
    } else {
      const m = keys.get(r.key_id) ?? { key_id: r.key_id, calls: 0, cost_usd_micros: 0 };
      m.calls += n;
      m.cost_usd_micros += cost;
      keys.set(r.key_id, m);
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
    by_model: [...models.values()]
      .filter((m) => m.calls > 0)
      .sort((a, b) => bySpend(a, b) || a.provider.localeCompare(b.provider) || (a.model ?? '').localeCompare(b.model ?? '')),
    by_key: [...keys.values()].filter((m) => m.calls > 0).sort((a, b) => bySpend(a, b) || (a.key_id ?? '').localeCompare(b.key_id ?? '')),
  };
}
