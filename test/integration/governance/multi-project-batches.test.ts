/**
 * The pipeline's batch statements (tollgate_govern_calls, tollgate_record_calls) carry the calls of
 * several projects at once and keep each project's spend counters and rate windows apart (migration
 * 0113 keeps them in arrays, one element per project and period or limit). Concurrent governed calls
 * of four projects, each with its own limit, go through the same batches: every project's limit
 * holds on its own and every counter adds up to its project's permits.
 */
import { governedCalls, instantProvider } from '../../../bench/lib/governed-calls';
import type { Db } from '../../../src/db/pool';
import { updatePolicy } from '../../../src/db/repositories/policies';
import { projectWithPolicy, testPool } from '../../unit/governance/helpers';

describe('batches that span projects (real PostgreSQL)', () => {
  let db: Db;
  beforeAll(() => {
    db = testPool(20);
  });
  afterAll(async () => {
    await db.end();
  });

  it("holds each project's quota, rate limit and budget on its own, and every counter adds up to its permits", async () => {
    // The provider reports the usage the estimate assumed (the prompt's tokens, the whole output
    // allowance), so a call settles at what it reserved and the budget project's count does not
    // depend on timing. The pipeline is `bench:footprint --pipeline`'s (bench/lib/governed-calls.ts).
    const call = governedCalls(db, instantProvider({ input_tokens: 15, output_tokens: 1024 }));
    const governedCall = async (projectId: string) => (await call(projectId)).decision;

    const quota = await projectWithPolicy(db, { plan_quota: { requests_per_period_override: 10 } });
    const rated = await projectWithPolicy(db, { rate_limits: [{ id: 'per-hour', metric: 'requests', limit: 15, window_seconds: 3600, action: 'throttle' }] });
    const open = await projectWithPolicy(db, {});
    // The budget project: one call first, to learn what a call reserves, then a monthly cap that fits 12.
    const budget = await projectWithPolicy(db, {});
    expect(await governedCall(budget)).toBe('allow');
    const { rows: first } = await db.query<{ reserved: string }>('SELECT reserved_cost_micros AS reserved FROM permits WHERE project_id = $1', [budget]);
    await updatePolicy(db, { projectId: budget, patch: { budgets: { monthly_usd_micros: 12 * Number(first[0].reserved) } }, mode: 'merge', updatedBy: 'test', now: new Date() });

    const projects = [quota, rated, open, budget];
    // One pipeline (one batch lane per statement) and 160 calls in flight: the batches carry calls of all four projects.
    const decisions = await Promise.all(Array.from({ length: 160 }, (_, i) => governedCall(projects[i % 4]).then((d) => ({ projectId: projects[i % 4], d }))));
    const allowed = (p: string) => decisions.filter((x) => x.projectId === p && x.d === 'allow').length;
    expect(allowed(quota)).toBe(10);
    expect(allowed(rated)).toBe(15);
    expect(decisions.filter((x) => x.projectId === rated && x.d === 'throttle')).toHaveLength(25);
    expect(allowed(open)).toBe(40);
    expect(allowed(budget)).toBe(11);
    const { rows: costs } = await db.query<{ reserved: string; actual: string }>(
      "SELECT DISTINCT reserved_cost_micros AS reserved, actual_cost_micros AS actual FROM permits WHERE project_id = $1 AND decision = 'allow'",
      [budget],
    );
    expect(costs).toEqual([{ reserved: first[0].reserved, actual: first[0].reserved }]);

    for (const projectId of projects) {
      const { rows: permits } = await db.query<{ n: string; settled: string; active: string }>(
        `SELECT count(*) AS n, coalesce(sum(actual_cost_micros), 0) AS settled, count(*) FILTER (WHERE reservation_state <> 'settled') AS active
           FROM permits WHERE project_id = $1 AND decision = 'allow'`,
        [projectId],
      );
      expect(Number(permits[0].active)).toBe(0);
      const { rows: counters } = await db.query<{ period_kind: string; reserved_micros: string; settled_micros: string; requests: string }>(
        'SELECT period_kind, reserved_micros, settled_micros, requests FROM spend_counters WHERE project_id = $1 ORDER BY period_kind',
        [projectId],
      );
      expect(counters.map((r) => r.period_kind)).toEqual(['day', 'month', 'quarter', 'week']);
      for (const r of counters) {
        expect({ project: projectId, period: r.period_kind, reserved: Number(r.reserved_micros), settled: Number(r.settled_micros), requests: Number(r.requests) })
          .toEqual({ project: projectId, period: r.period_kind, reserved: 0, settled: Number(permits[0].settled), requests: Number(permits[0].n) });
      }
    }
    const { rows: windows } = await db.query<{ used: string }>('SELECT coalesce(sum(amount), 0) AS used FROM rate_limit_events WHERE project_id = $1', [rated]);
    expect(Number(windows[0].used)).toBe(15);
  });
});
