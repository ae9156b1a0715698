/**
 * Rate limits as exact sliding windows on the database clock (migration 0105): a burst straddling
 * what used to be a fixed-window boundary gets at most N, no interval of the window's length ever
 * holds more than N (checked on the stamps PostgreSQL wrote), two pools share one limit, and a
 * throttle's Retry-After is when capacity actually comes back.
 */
import { systemClock } from '../../../src/clock';
import type { Db } from '../../../src/db/pool';
import { consumeReadRate } from '../../../src/db/repositories/spend';
import { createGovernance } from '../../../src/governance';
import { projectWithPolicy, request, testPool } from '../../unit/governance/helpers';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The largest amount any interval (x − W, x] holds, from the stamps PostgreSQL wrote. */
async function maxInAnyWindow(db: Db, projectId: string, limitId: string, windowSeconds: number): Promise<number> {
  const { rows } = await db.query<{ m: number }>(
    `SELECT coalesce(max(s), 0)::int AS m FROM (
       SELECT (SELECT sum(b.amount) FROM rate_limit_events b
                WHERE b.project_id = a.project_id AND b.limit_id = a.limit_id AND b.window_seconds = a.window_seconds
                  AND b.at > a.at - make_interval(secs => a.window_seconds) AND b.at <= a.at) AS s
         FROM rate_limit_events a WHERE a.project_id = $1 AND a.limit_id = $2 AND a.window_seconds = $3) t`,
    [projectId, limitId, windowSeconds],
  );
  return rows[0].m;
}

describe('sliding-window rate limits (real PostgreSQL)', () => {
  let db: Db;
  let db2: Db;
  beforeAll(() => {
    db = testPool(10);
    db2 = testPool(10);
  });
  afterAll(async () => {
    await db.end();
    await db2.end();
  });

  it('a burst straddling a window boundary gets at most N; no interval of W seconds ever holds more than N', async () => {
    const N = 5;
    // A window well longer than the burst: a call delayed on a loaded machine still falls inside it.
    const W = 4;
    const projectId = await projectWithPolicy(db, { rate_limits: [{ id: 'burst', metric: 'requests', limit: N, window_seconds: W, action: 'throttle' }] });
    const govA = createGovernance({ db, clock: systemClock });
    const govB = createGovernance({ db: db2, clock: systemClock });
    // Start 0.6 s before an epoch multiple of W (where a fixed window would reset) and keep
    // sending, from two pools, for 1.2 s: a fixed window let N through on each side of it.
    const boundary = Math.ceil((Date.now() + 700) / (W * 1000)) * W * 1000;
    await sleep(boundary - 600 - Date.now());
    const decisions: { decision: string; retry?: number }[] = [];
    const end = boundary + 600;
    // A stalled machine may have too few decisions by then: go on until there are enough, but stop a
    // second before the first call's window closes (capacity would come back).
    const cap = Date.now() + W * 1000 - 1_000;
    await Promise.all(
      Array.from({ length: 4 }, async (_, i) => {
        while (Date.now() < cap && (Date.now() < end || decisions.length <= 2 * N)) {
          const d = await (i % 2 ? govA : govB).evaluate(request(projectId), { persist: true });
          decisions.push({ decision: d.decision, retry: d.retry_after_seconds });
          await sleep(20);
        }
      }),
    );
    const allowed = decisions.filter((d) => d.decision === 'allow').length;
    expect(decisions.length).toBeGreaterThan(2 * N);
    expect(allowed).toBe(N);
    expect(decisions.filter((d) => d.decision === 'throttle').length).toBe(decisions.length - N);
    for (const d of decisions.filter((x) => x.decision === 'throttle')) {
      expect(d.retry).toBeGreaterThanOrEqual(1);
      expect(d.retry).toBeLessThanOrEqual(W);
    }
    expect(await maxInAnyWindow(db, projectId, 'burst', W)).toBe(N);
  });

  it('capacity comes back as the oldest calls age out (sustained load never exceeds N per any W)', async () => {
    const N = 3;
    const W = 1;
    const projectId = await projectWithPolicy(db, { rate_limits: [{ id: 'steady', metric: 'requests', limit: N, window_seconds: W, action: 'deny' }] });
    const gov = createGovernance({ db, clock: systemClock });
    let allowed = 0;
    const cap = Date.now() + 20_000;
    while (allowed <= 2 * N && Date.now() < cap) {
      const d = await gov.evaluate(request(projectId), { persist: true });
      if (d.decision === 'allow') allowed++;
      else expect(d.reason_code).toBe('budget.rate_limit_exceeded');
      await sleep(30);
    }
    // Capacity came back twice under sustained load, never more than N in any 1 s.
    expect(allowed).toBeGreaterThan(2 * N);
    expect(await maxInAnyWindow(db, projectId, 'steady', W)).toBeLessThanOrEqual(N);
  });

  it('proxy reads and governed calls share the window; a refused read gets the wait until capacity returns', async () => {
    const projectId = await projectWithPolicy(db, { rate_limits: [{ id: 'mixed', metric: 'requests', limit: 2, window_seconds: 30, action: 'throttle' }] });
    const gov = createGovernance({ db, clock: systemClock });
    expect((await gov.evaluate(request(projectId), { persist: true })).decision).toBe('allow');
    expect(await consumeReadRate(db2, projectId, new Date())).toEqual({ ok: true });
    const refused = await consumeReadRate(db, projectId, new Date());
    expect(refused).toMatchObject({ ok: false, limit_id: 'mixed', action: 'throttle', limit: 2, window_seconds: 30 });
    if (refused.ok) throw new Error('unreachable');
    expect(refused.retry_after_seconds).toBeGreaterThan(20);
    expect(refused.retry_after_seconds).toBeLessThanOrEqual(30);
    const throttled = await gov.evaluate(request(projectId), { persist: true });
    expect(throttled).toMatchObject({ decision: 'throttle', reason_code: 'budget.rate_limit_throttled' });
    expect(throttled.retry_after_seconds).toBeLessThanOrEqual(30);
  });

  it('a busy limit keeps one row per bucket (1/100 of the window), not one per call', async () => {
    const projectId = await projectWithPolicy(db, { rate_limits: [{ id: 'busy', metric: 'requests', limit: 100_000, window_seconds: 1, action: 'deny' }] });
    const gov = createGovernance({ db, clock: systemClock });
    const t0 = Date.now();
    await Promise.all(Array.from({ length: 8 }, async () => {
      for (let i = 0; i < 40; i++) await gov.evaluate(request(projectId), { persist: true });
    }));
    const elapsedMs = Date.now() - t0;
    const { rows } = await db.query<{ n: number; total: number }>("SELECT count(*)::int AS n, sum(amount)::int AS total FROM rate_limit_events WHERE project_id = $1", [projectId]);
    expect(rows[0].total).toBe(320);
    // One row per 10 ms bucket the calls fell in, not one per call (or per batch).
    expect(rows[0].n).toBeLessThanOrEqual(Math.ceil(elapsedMs / 10) + 2);
    expect(rows[0].n).toBeLessThan(320);
  });

  it('a tokens limit counts each call\'s tokens in the window', async () => {
    const projectId = await projectWithPolicy(db, { rate_limits: [{ id: 'tok', metric: 'tokens', limit: 500, window_seconds: 60, action: 'deny' }] });
    const gov = createGovernance({ db, clock: systemClock });
    // 200 tokens each (100 in + 100 out): two fit, the third does not.
    const ds = [];
    for (let i = 0; i < 3; i++) ds.push(await gov.evaluate(request(projectId), { persist: true }));
    expect(ds.map((d) => d.decision)).toEqual(['allow', 'allow', 'deny']);
    expect(ds[2].decision_details).toMatchObject({ rate_limit_id: 'tok', used: 400, requested: 200, limit: 500 });
  });
});
