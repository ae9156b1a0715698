/**
 * The call rollup (migration 0230) against the records it folds: the Overview's aggregates read
 * through the rollup (`callMetrics`) equal an aggregate of the raw records over the same window —
 * counts, cost and tokens exactly, percentiles within the histogram's resolution — whatever the
 * window's alignment and bucket size, for records folded in one sequencer round or across two
 * (the same minutes upserted twice), for records not chained yet, and for a project whose records
 * partly predate its rollup start.
 *
 * On a database of its own: the sequencer is run by hand here, and other test files' Tollgates
 * would otherwise chain (and fold) these projects' records.
 */
import { createGovernedCallActivities } from '../../../activities/governed-call';
import { callInput } from '../../../bench/lib/governed-calls';
import { systemClock } from '../../../src/clock';
import { LATENCY_BOUNDS, LATENCY_RESOLUTION, bucketValue, histogramPercentile } from '../../../src/db/latency-histogram';
import type { Db } from '../../../src/db/pool';
import { callMetrics, planMetrics } from '../../../src/db/repositories/call-metrics';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import { updatePolicy } from '../../../src/db/repositories/policies';
import { createProject } from '../../../src/db/repositories/projects';
import { createGovernance } from '../../../src/governance';
import { createLogger } from '../../../src/logger';
import { pricing } from '../../../src/pricing';
import { ProviderError, type ProviderGateway } from '../../../src/providers/types';
import { ownDatabasePool } from '../../support/own-database';
import { seededRandom } from '../../support/rollup-fixtures';

const MINUTE = 60_000;
const HOUR = 3_600_000;

/** A provider that answers at once, or fails for a prompt of 'fail'. */
const provider: ProviderGateway = {
  dispatch: async (req) => {
    const text = JSON.stringify(req.messages);
    if (text.includes('"fail"')) throw new ProviderError({ kind: 'http_error', status: 500, retryable: false, message: 'failed in the test' });
    const input = 10 + (text.length % 7);
    return {
      output: { content: [{ type: 'text', role: 'assistant', text: 'ok' }] },
      output_assets: [],
      usage: { input_tokens: input, output_tokens: 5, total_tokens: input + 5, metrics: [], estimated: false },
      finish_reason: 'stop',
    };
  },
};

describe('the call rollup', () => {
  const own = ownDatabasePool('call_rollup');
  const targets = [
    { provider: 'openai' as const, model: 'gpt-4o-mini' },
    { provider: 'anthropic' as const, model: 'claude-sonnet-4-5' },
  ];

  /**
   * `n` governed calls through the in-process pipeline, created at `now - ago()` (so they spread
   * over minutes and hours, and their durations over the histogram's range): one in ten denied
   * (a model outside the project's allowed models: a record without a lifecycle, chained by its
   * terminal event), one in eight failed, two models, three keys.
   */
  async function record(db: Db, projectId: string, n: number, rnd: () => number, ago: () => number): Promise<void> {
    const calls = createGovernedCallActivities({ db, clock: systemClock, logger: createLogger('warn'), governance: createGovernance({ db, clock: systemClock }), pricing, providers: provider, recordCommit: 'sync' });
    for (let i = 0; i < n; i++) {
      const c = callInput(projectId);
      const target = targets[Math.floor(rnd() * targets.length)];
      c.input.routing = { ...c.input.routing, requested_provider: target.provider, requested_model: target.model, primary: target };
      c.request = { ...c.request, ...target };
      c.input.keyId = ['key_a', 'key_b', null][Math.floor(rnd() * 3)];
      c.input.createdAt = new Date(Date.now() - ago()).toISOString();
      const deny = rnd() < 0.1;
      if (deny) {
        const refused = { provider: 'google' as const, model: 'gemini-2.5-flash' };
        c.input.routing = { ...c.input.routing, requested_provider: refused.provider, requested_model: refused.model, primary: refused };
        c.request = { ...c.request, ...refused };
      }
      if (!deny && rnd() < 0.125) c.input.request = { ...c.input.request, messages: [{ role: 'user', content: 'fail' }] };
      c.request = { ...c.request, messages: c.input.request.messages };
      const gov = await calls.govern({ input: c.input, request: c.request, route: 'executions', inspectableText: [c.prompt], permitMetadata: {}, inProcess: {} });
      if (gov.decision !== 'allow') {
        await calls.record(c.input, { kind: 'governed_out', gov });
        continue;
      }
      const { outcome } = await calls.dispatch(c.input);
      await calls.record(c.input, { kind: 'dispatched', gov, outcome });
    }
  }

  async function allowTwoModels<P extends { id: string }>(project: P): Promise<P> {
    const patch = { allowed_models: targets.map((t) => `${t.provider}/${t.model}`) };
    await updatePolicy(own.db, { projectId: project.id, patch, mode: 'merge', updatedBy: 'test', now: new Date() });
    return project;
  }

  /** The aggregates straight from the records, as callMetrics answered before the rollup. */
  async function rawMetrics(projectId: string, from: Date, to: Date, bucketSeconds: number) {
    const where = 'project_id = $1 AND created_at >= $2 AND created_at < $3';
    const { rows: series } = await own.db.query(
      `SELECT extract(epoch FROM start) * 1000 AS start,
              count(*) FILTER (WHERE status = 'completed')::int AS completed,
              count(*) FILTER (WHERE status = 'failed')::int AS failed,
              count(*) FILTER (WHERE status = 'denied')::int AS denied,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE status <> 'denied') AS p50,
              percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE status <> 'denied') AS p95,
              COALESCE(sum(cost_usd_micros), 0)::bigint AS cost
         FROM (SELECT date_bin(make_interval(secs => $4), created_at, $2) AS start, status, duration_ms, cost_usd_micros FROM calls WHERE ${where}) AS e
        GROUP BY GROUPING SETS ((start), ())`,
      [projectId, from, to, bucketSeconds],
    );
    const { rows: spend } = await own.db.query(
      `SELECT GROUPING(provider, model) = 3 AS by_key, provider, model, key_id, count(*)::int AS calls, COALESCE(sum(cost_usd_micros), 0)::bigint AS cost
         FROM calls WHERE ${where} GROUP BY GROUPING SETS ((provider, model), (key_id))`,
      [projectId, from, to],
    );
    return { series, spend };
  }

  const near = (actual: number | null, exact: number | null) => {
    if (exact === null) return actual === null;
    // The histogram's resolution, and the response's rounding to whole milliseconds.
    return actual !== null && Math.abs(actual - exact) <= LATENCY_RESOLUTION * exact + 0.5;
  };

  async function expectSameAsRaw(projectId: string, from: Date, to: Date, bucketSeconds: number): Promise<number> {
    const m = await callMetrics(own.db, projectId, { from, to, bucketSeconds });
    const raw = await rawMetrics(projectId, from, to, bucketSeconds);
    const label = `${from.toISOString()} – ${to.toISOString()} by ${bucketSeconds} s`;
    const totals = raw.series.find((r) => r.start === null)!;
    expect([label, m.totals.completed, m.totals.failed, m.totals.denied, m.totals.cost_usd_micros]).toEqual([
      label,
      totals.completed,
      totals.failed,
      totals.denied,
      Number(totals.cost),
    ]);
    expect([label, 'p50', near(m.totals.p50_ms, totals.p50), m.totals.p50_ms, totals.p50]).toEqual([label, 'p50', true, m.totals.p50_ms, totals.p50]);
    expect([label, 'p95', near(m.totals.p95_ms, totals.p95), m.totals.p95_ms, totals.p95]).toEqual([label, 'p95', true, m.totals.p95_ms, totals.p95]);
    const byStart = new Map(raw.series.filter((r) => r.start !== null).map((r) => [Number(r.start), r]));
    for (const b of m.series) {
      const r = byStart.get(Date.parse(b.start));
      expect([label, b.start, b.completed, b.failed, b.denied]).toEqual([label, b.start, r?.completed ?? 0, r?.failed ?? 0, r?.denied ?? 0]);
      expect([label, b.start, near(b.p50_ms, r?.p50 ?? null), near(b.p95_ms, r?.p95 ?? null)]).toEqual([label, b.start, true, true]);
    }
    const models = raw.spend.filter((r) => !r.by_key && r.provider !== null).map((r) => ({ provider: r.provider, model: r.model, calls: r.calls, cost_usd_micros: Number(r.cost) }));
    const keys = raw.spend.filter((r) => r.by_key).map((r) => ({ key_id: r.key_id, calls: r.calls, cost_usd_micros: Number(r.cost) }));
    const sortBy = <T>(xs: T[]) => [...xs].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    expect([label, sortBy(m.by_model)]).toEqual([label, sortBy(models)]);
    expect([label, sortBy(m.by_key)]).toEqual([label, sortBy(keys)]);
    return m.totals.calls;
  }

  /** Windows of every alignment the plan distinguishes, around `now`. */
  function windows(now: number): [Date, Date, number][] {
    const hour = Math.floor(now / HOUR) * HOUR;
    const odd = now - 7_777;
    const minute = Math.ceil(now / MINUTE) * MINUTE;
    return [
      [new Date(minute - HOUR), new Date(minute), 60], // the Overview's hour: whole minutes, no hour to read
      [new Date(hour + HOUR - 7 * 24 * HOUR), new Date(hour + HOUR), 3600], // the Overview's week: hours, most of them empty
      [new Date(hour - 3 * HOUR), new Date(hour + HOUR), 3600], // whole hours
      [new Date(hour - 4 * HOUR), new Date(hour + HOUR), 300], // whole minutes in hour-aligned buckets
      [new Date(odd - 3 * HOUR - 500), new Date(odd), 600], // unaligned: edges and straddling minutes
      [new Date(odd - 3 * HOUR - 500), new Date(odd), 7200],
      [new Date(odd - HOUR + 13_000), new Date(odd + MINUTE), 60],
      [new Date(odd - 40 * MINUTE), new Date(odd), 10], // buckets under a minute: all from the records
    ];
  }

  /** The rollup's rows summed per dimension and width against the records: counts, cost and tokens exactly. */
  async function expectRollupSums(projectId: string, since: Date | null) {
    const { rows: rolled } = await own.db.query(
      `SELECT width, dimension, sum(calls)::int AS calls, sum(failed)::int AS failed, sum(denied)::int AS denied,
              sum(input_tokens)::bigint::text AS input, sum(output_tokens)::bigint::text AS output, sum(cost_usd_micros)::bigint::text AS cost,
              count(*)::int AS rows
         FROM call_rollup WHERE project_id = $1 GROUP BY 1, 2 ORDER BY 1, 2`,
      [projectId],
    );
    const { rows: raw } = await own.db.query(
      `SELECT count(*)::int AS calls, (count(*) FILTER (WHERE status = 'failed'))::int AS failed, (count(*) FILTER (WHERE status = 'denied'))::int AS denied,
              sum(input_tokens)::bigint::text AS input, sum(output_tokens)::bigint::text AS output, sum(cost_usd_micros)::bigint::text AS cost
         FROM calls WHERE project_id = $1 AND ($2::timestamptz IS NULL OR created_at >= $2)`,
      [projectId, since],
    );
    expect(rolled.map((r) => `${r.width} ${r.dimension}`)).toEqual(['60 key', '60 model', '60 status', '3600 key', '3600 model', '3600 status']);
    for (const r of rolled) expect({ ...r, width: undefined, dimension: undefined, rows: undefined }).toEqual({ ...raw[0], width: undefined, dimension: undefined, rows: undefined });
    // Hours hold fewer rows than minutes: the rollup is what makes a week cheap.
    expect(rolled.find((r) => r.width === 3600 && r.dimension === 'status')!.rows).toBeLessThan(rolled.find((r) => r.width === 60 && r.dimension === 'status')!.rows);
  }

  it('equals the raw aggregate after one round, with records pending, and after a second round upserting the same minutes', async () => {
    const project = await allowTwoModels(await createProject(own.db, { name: 'rollup', plan: 'production' }));
    const rnd = seededRandom(42);
    await record(own.db, project.id, 120, rnd, () => rnd() * 3 * HOUR);
    await chainAllProjectEvents(own.db, project.id);
    // Both kinds of record: with a lifecycle (chained as a leaf) and without (by its terminal event).
    const { rows: kinds } = await own.db.query(
      `SELECT status, seq IS NOT NULL AS leaf, count(*)::int AS n FROM calls WHERE project_id = $1 GROUP BY 1, 2 ORDER BY 1, 2`,
      [project.id],
    );
    expect(kinds.map((k) => `${k.status} ${k.leaf}`)).toEqual(['completed true', 'denied false', 'failed true']);
    await expectRollupSums(project.id, null);
    const now = Date.now();
    for (const [from, to, bucket] of windows(now)) await expectSameAsRaw(project.id, from, to, bucket);

    // Not chained yet: read from the records, in the rolled-up minutes too.
    await record(own.db, project.id, 60, rnd, () => rnd() * 3 * HOUR);
    const { rows: pending } = await own.db.query('SELECT count(*)::int AS n FROM event_chain_pending WHERE project_id = $1', [project.id]);
    expect(pending[0].n).toBeGreaterThan(0);
    for (const [from, to, bucket] of windows(now)) await expectSameAsRaw(project.id, from, to, bucket);

    // Chained in a second round: the same minutes' rows updated, no record counted twice.
    const { rows: before } = await own.db.query('SELECT count(*)::int AS n FROM call_rollup WHERE project_id = $1', [project.id]);
    await chainAllProjectEvents(own.db, project.id);
    await expectRollupSums(project.id, null);
    const { rows: after } = await own.db.query('SELECT count(*)::int AS n FROM call_rollup WHERE project_id = $1', [project.id]);
    expect(after[0].n).toBeLessThan(before[0].n + 60 * 6);
    let seen = 0;
    for (const [from, to, bucket] of windows(now)) seen = Math.max(seen, await expectSameAsRaw(project.id, from, to, bucket));
    expect(seen).toBe(180);
  });

  it('leaves out records created before the project’s rollup start, and reads them from the records', async () => {
    const project = await allowTwoModels(await createProject(own.db, { name: 'rollup start', plan: 'production' }));
    const started = new Date(Date.now() - 95 * MINUTE - 17_000);
    await own.db.query('INSERT INTO call_rollup_starts (project_id, started_at) VALUES ($1, $2)', [project.id, started]);
    const rnd = seededRandom(7);
    await record(own.db, project.id, 80, rnd, () => rnd() * 3 * HOUR);
    await chainAllProjectEvents(own.db, project.id);
    await expectRollupSums(project.id, started);
    const { rows: before } = await own.db.query('SELECT count(*)::int AS n FROM calls WHERE project_id = $1 AND created_at < $2', [project.id, started]);
    expect(before[0].n).toBeGreaterThan(0);
    for (const [from, to, bucket] of windows(Date.now())) await expectSameAsRaw(project.id, from, to, bucket);
  });

  it('plans whole periods inside buckets from the rollup and the rest from the records, covering the window once', () => {
    const t0 = Date.UTC(2026, 0, 5, 10, 0, 0);
    const check = (from: number, to: number, bucketMs: number, rolledFrom: number | null) => {
      const p = planMetrics(from, to, bucketMs, rolledFrom);
      const covered = (ranges: [number, number][]) => ranges.reduce((n, [a, b]) => n + (b - a), 0);
      // The series and spend each cover the window exactly once.
      expect(covered(p.raw) + covered(p.rawSeries) + covered(p.statusMinutes) + covered(p.statusHours)).toBe(to - from);
      expect(covered(p.raw) + covered(p.spendMinutes) + covered(p.spendHours)).toBe(to - from);
      for (const [a, b] of p.statusMinutes.concat(p.spendMinutes)) expect([a % MINUTE, b % MINUTE]).toEqual([0, 0]);
      for (const [a, b] of p.statusHours.concat(p.spendHours)) expect([a % HOUR, b % HOUR]).toEqual([0, 0]);
      // A rolled-up period never straddles a bucket boundary; what the series reads from the records is rolled-up time for spend.
      for (const [a, b] of p.statusMinutes) for (let m = a; m < b; m += MINUTE) expect(Math.floor((m - from) / bucketMs)).toBe(Math.floor((m + MINUTE - 1 - from) / bucketMs));
      for (const [a, b] of p.statusHours) for (let h = a; h < b; h += HOUR) expect(Math.floor((h - from) / bucketMs)).toBe(Math.floor((h + HOUR - 1 - from) / bucketMs));
      const inSpend = (t: number) => p.spendMinutes.concat(p.spendHours).some(([a, b]) => t >= a && t < b);
      for (const [a, b] of p.rawSeries) expect([inSpend(a), inSpend(b - 1)]).toEqual([true, true]);
      if (rolledFrom !== null) for (const [a] of [...p.statusMinutes, ...p.statusHours, ...p.spendMinutes, ...p.spendHours]) expect(a).toBeGreaterThanOrEqual(rolledFrom);
      return p;
    };
    // A week in hour buckets on whole hours: hours only.
    expect(check(t0 - 7 * 24 * HOUR, t0, 3600_000, null)).toEqual({ raw: [], rawSeries: [], statusMinutes: [], statusHours: [[t0 - 7 * 24 * HOUR, t0]], spendMinutes: [], spendHours: [[t0 - 7 * 24 * HOUR, t0]] });
    // The dashboard's day (hour buckets, ending on an hour): hour rows only, for both.
    expect(check(t0 - 24 * HOUR, t0, 3600_000, null)).toEqual({ raw: [], rawSeries: [], statusMinutes: [], statusHours: [[t0 - 24 * HOUR, t0]], spendMinutes: [], spendHours: [[t0 - 24 * HOUR, t0]] });
    // A day in 5-minute buckets: minutes for the series, hours for spend.
    const day = check(t0 - 24 * HOUR, t0, 300_000, null);
    expect(day.raw).toEqual([]);
    expect(day.statusHours).toEqual([]);
    expect(day.spendHours).toEqual([[t0 - 24 * HOUR, t0]]);
    // Unaligned: sub-minute edges from the records; for the series, the minutes holding a bucket
    // boundary too, while spend reads whole hours.
    const odd = check(t0 - 24 * HOUR + 12_345, t0 + 12_345, 3600_000, null);
    expect(odd.raw).toHaveLength(2);
    expect(odd.rawSeries).toHaveLength(23);
    expect(odd.spendHours).toEqual([[t0 - 23 * HOUR, t0]]);
    check(t0 - HOUR + 1, t0 + 59_999, 10_000, null);
    check(t0 - 3 * HOUR, t0, 600_000, t0 - 95 * MINUTE - 17_000);
    check(t0 - 3 * HOUR, t0, 600_000, t0 + HOUR);
  });

  it('reads a percentile within the histogram’s resolution', () => {
    expect(LATENCY_BOUNDS.slice(0, 12)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    for (let i = 1; i < LATENCY_BOUNDS.length; i++) expect(LATENCY_BOUNDS[i] / LATENCY_BOUNDS[i - 1]).toBeLessThanOrEqual(2);
    const rnd = seededRandom(3);
    for (let round = 0; round < 50; round++) {
      const durations = Array.from({ length: 1 + Math.floor(rnd() * 300) }, () => Math.floor(Math.exp(rnd() * 14)));
      const h = new Map<number, number>();
      for (const d of durations) {
        const b = LATENCY_BOUNDS.filter((x) => x <= d).length;
        h.set(b, (h.get(b) ?? 0) + 1);
        expect(Math.abs(bucketValue(b) - d)).toBeLessThanOrEqual(LATENCY_RESOLUTION * d + 1e-9);
      }
      const sorted = [...durations].sort((a, b) => a - b);
      for (const q of [0.5, 0.95]) {
        const pos = q * (sorted.length - 1);
        const exact = sorted[Math.floor(pos)] + (pos - Math.floor(pos)) * (sorted[Math.ceil(pos)] - sorted[Math.floor(pos)]);
        expect(Math.abs(histogramPercentile(h, q)! - exact)).toBeLessThanOrEqual(LATENCY_RESOLUTION * exact + 1e-9);
      }
    }
  });
});
