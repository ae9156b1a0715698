import { systemClock } from '../../../src/clock';
import { Db } from '../../../src/db/pool';
import { createGovernance } from '../../../src/governance';
import { appendEvent, appendEvents, listEventsByRequest } from '../../../src/db/repositories/events';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import { verifyEventChain } from '../../../src/db/repositories/event-chain-verification';
import { projectWithPolicy, request, testPool } from '../../unit/governance/helpers';

describe('governance under concurrency (real PostgreSQL)', () => {
  let db: Db;
  let db2: Db;
  beforeAll(() => {
    db = testPool(20);
    db2 = testPool(20);
  });
  afterAll(async () => {
    await db.end();
    await db2.end();
  });

  const spend = async (projectId: string) => {
    const { rows } = await db.query(
      "SELECT period_kind, reserved_micros, settled_micros, requests FROM spend_counters WHERE project_id = $1 ORDER BY period_kind",
      [projectId],
    );
    return rows;
  };

  it('200 concurrent permits against a monthly cap that fits exactly 50: 50 allowed, spend never above the cap', async () => {
    const projectId = await projectWithPolicy(db, { budgets: { monthly_usd_micros: 50 * 7_000 } });
    const govA = createGovernance({ db, clock: systemClock });
    const govB = createGovernance({ db: db2, clock: systemClock });
    const decisions = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 ? govA : govB).evaluate(request(projectId, { estimatedCostMicros: 7_000 }), { persist: true })),
    );
    const allowed = decisions.filter((d) => d.decision === 'allow');
    expect(allowed).toHaveLength(50);
    expect(decisions.filter((d) => d.reason_code === 'budget.monthly_cap_exceeded')).toHaveLength(150);
    const month = (await spend(projectId)).find((r) => r.period_kind === 'month');
    expect(month.reserved_micros).toBe(350_000);
    // Settle every allowed permit concurrently (twice each: idempotent) at the estimated cost.
    await Promise.all(allowed.flatMap((d) => [govA.settle(d.permit_id, { costMicros: 7_000, inputTokens: 1, outputTokens: 1 }), govB.settle(d.permit_id, { costMicros: 7_000, inputTokens: 1, outputTokens: 1 })]));
    const after = (await spend(projectId)).find((r) => r.period_kind === 'month');
    expect(after).toMatchObject({ reserved_micros: 0, settled_micros: 350_000, requests: 50 });
    expect(after.settled_micros).toBeLessThanOrEqual(50 * 7_000);
    const { rows } = await db.query("SELECT count(*)::int AS n FROM permits WHERE project_id = $1 AND decision = 'allow'", [projectId]);
    expect(rows[0].n).toBe(50);
    expect((await verifyEventChain(db, projectId)).ok).toBe(true);
  });

  it('200 concurrent permits against a plan quota of 50: exactly 50 allowed', async () => {
    const projectId = await projectWithPolicy(db, { plan_quota: { requests_per_period_override: 50 } });
    const govA = createGovernance({ db, clock: systemClock });
    const govB = createGovernance({ db: db2, clock: systemClock });
    const decisions = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 ? govA : govB).evaluate(request(projectId), { persist: true })),
    );
    expect(decisions.filter((d) => d.decision === 'allow')).toHaveLength(50);
    expect(decisions.filter((d) => d.reason_code === 'budget.plan_quota_exceeded')).toHaveLength(150);
    const month = (await spend(projectId)).find((r) => r.period_kind === 'month');
    expect(month.requests).toBe(50);
  });

  it('a rate limit is shared by two independent pools; throttles carry retry_after_seconds', async () => {
    const projectId = await projectWithPolicy(db, {
      rate_limits: [{ id: 'per-hour', metric: 'requests', limit: 30, window_seconds: 3600, action: 'throttle' }],
    });
    const govA = createGovernance({ db, clock: systemClock });
    const govB = createGovernance({ db: db2, clock: systemClock });
    const decisions = await Promise.all(
      Array.from({ length: 80 }, (_, i) => (i % 2 ? govA : govB).evaluate(request(projectId), { persist: true })),
    );
    expect(decisions.filter((d) => d.decision === 'allow')).toHaveLength(30);
    const throttled = decisions.filter((d) => d.decision === 'throttle');
    expect(throttled).toHaveLength(50);
    for (const t of throttled) {
      expect(t.reason_code).toBe('budget.rate_limit_throttled');
      expect(t.retry_after_seconds).toBeGreaterThanOrEqual(1);
      expect(t.retry_after_seconds).toBeLessThanOrEqual(3600);
      expect(t.decision_details.retry_after_seconds).toBe(t.retry_after_seconds);
    }
    const { rows } = await db.query('SELECT sum(amount)::int AS used FROM rate_limit_events WHERE project_id = $1', [projectId]);
    expect(rows[0].used).toBe(30);
  });

  describe('event hash chain', () => {
    it('stays linear under concurrent appends from two pools and verifies', async () => {
      const projectId = await projectWithPolicy(db);
      await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          i % 3 === 0
            ? appendEvents(i % 2 ? db : db2, [
                { projectId, eventType: 'execution.started', source: 'execution_events', phase: 'execution', requestId: `r${i}` },
                { projectId, eventType: 'request.completed', source: 'execution_events', phase: 'completion', requestId: `r${i}` },
              ])
            : appendEvent(i % 2 ? db : db2, { projectId, eventType: 'usage.recorded', source: 'execution_events', phase: 'usage', requestId: `r${i}`, metadata: { n: i } }),
        ),
      );
      // Inserted unchained: readable at once, chained by the sequencer.
      const before = await listEventsByRequest(db, projectId, 'r0');
      expect(before.map((e) => e.event_type)).toEqual(['execution.started', 'request.completed']);
      // Two sequencers (two pools) at once: the per-project try-lock keeps the chain linear.
      await Promise.all([chainAllProjectEvents(db, projectId), chainAllProjectEvents(db2, projectId)]);
      const v = await verifyEventChain(db, projectId);
      expect(v).toMatchObject({ ok: true, count: 80, broken_at_seq: null });
      const r0 = await listEventsByRequest(db, projectId, 'r0');
      expect(r0.map((e) => e.event_type)).toEqual(['execution.started', 'request.completed']);
      expect(r0.every((e) => typeof e.hash === 'string' && e.hash.length === 64)).toBe(true);
      const { rows } = await db.query(
        'SELECT c.seq, c.chain_pos, e.request_id FROM event_chain c JOIN events e ON e.seq = c.seq WHERE c.project_id = $1 ORDER BY c.chain_pos',
        [projectId],
      );
      // Positions 1..80 with no gap, every event chained exactly once.
      expect(rows.map((r) => Number(r.chain_pos))).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));
      expect(new Set(rows.map((r) => Number(r.seq))).size).toBe(80);
      // Chain order is commit order, which is seq order only within one insert statement: a
      // sequencer in another process (any e2e server of the same run) may chain the statements that
      // committed first while lower seqs are still in flight. A statement's events are chained in one round, in order.
      for (let i = 0; i < 60; i += 3) {
        const own = rows.filter((r) => r.request_id === `r${i}`);
        expect(own).toHaveLength(2);
        expect(Number(own[1].chain_pos)).toBeGreaterThan(Number(own[0].chain_pos));
        expect(Number(own[1].seq)).toBeGreaterThan(Number(own[0].seq));
      }
    });

    it('events appended after a chaining round extend the same chain', async () => {
      const projectId = await projectWithPolicy(db);
      await appendEvent(db, { projectId, eventType: 'permit.allowed', source: 'permits', phase: 'permit' });
      expect((await verifyEventChain(db, projectId)).count).toBe(1);
      await appendEvents(db2, [
        { projectId, eventType: 'execution.started', source: 'execution_events', phase: 'execution' },
        { projectId, eventType: 'request.completed', source: 'execution_events', phase: 'completion' },
      ]);
      const { rows } = await db.query('SELECT coalesce(sum(cardinality(seqs)), 0)::int AS n FROM event_chain_pending WHERE project_id = $1', [projectId]);
      expect(rows[0].n).toBe(2);
      expect(await verifyEventChain(db, projectId)).toMatchObject({ ok: true, count: 3 });
    });

    it('detects an edited and a deleted event', async () => {
      const projectId = await projectWithPolicy(db);
      for (let i = 0; i < 5; i++) {
        await appendEvent(db, { projectId, eventType: 'permit.allowed', source: 'permits', phase: 'permit', metadata: { i }, timestamp: new Date(Date.UTC(2025, 0, 1, 0, 0, i)) });
      }
      expect((await verifyEventChain(db, projectId)).ok).toBe(true);
      const { rows } = await db.query('SELECT seq FROM events WHERE project_id = $1 ORDER BY seq', [projectId]);
      const seqs = rows.map((r) => Number(r.seq));

      await db.query(`UPDATE events SET metadata = '{"i": 99}' WHERE seq = $1`, [seqs[2]]);
      expect(await verifyEventChain(db, projectId)).toMatchObject({ ok: false, broken_at_seq: seqs[2] });
      await db.query(`UPDATE events SET metadata = '{"i": 2}' WHERE seq = $1`, [seqs[2]]);
      expect((await verifyEventChain(db, projectId)).ok).toBe(true);

      await db.query(`UPDATE events SET event_type = 'permit.denied' WHERE seq = $1`, [seqs[4]]);
      expect(await verifyEventChain(db, projectId)).toMatchObject({ ok: false, broken_at_seq: seqs[4] });
      await db.query(`UPDATE events SET event_type = 'permit.allowed' WHERE seq = $1`, [seqs[4]]);

      // A chain row removed: its event is neither chained nor pending, and the next link breaks.
      const removed = await db.query('DELETE FROM event_chain WHERE seq = $1 RETURNING *', [seqs[3]]);
      expect(await verifyEventChain(db, projectId)).toMatchObject({ ok: false, broken_at_seq: seqs[4] });
      const r = removed.rows[0];
      await db.query('INSERT INTO event_chain (seq, project_id, chain_pos, prev_hash, hash) VALUES ($1, $2, $3, $4, $5)', [r.seq, r.project_id, r.chain_pos, r.prev_hash, r.hash]);
      expect((await verifyEventChain(db, projectId)).ok).toBe(true);

      // An event row deleted after chaining: the chain points at a missing event.
      await db.query('DELETE FROM events WHERE seq = $1', [seqs[1]]);
      expect(await verifyEventChain(db, projectId)).toMatchObject({ ok: false, broken_at_seq: seqs[1] });
    });

    it('reports an event whose chain row and pending marker were both removed', async () => {
      const projectId = await projectWithPolicy(db);
      for (let i = 0; i < 3; i++) await appendEvent(db, { projectId, eventType: 'permit.allowed', source: 'permits', phase: 'permit', metadata: { i } });
      expect((await verifyEventChain(db, projectId)).ok).toBe(true);
      const { rows } = await db.query('SELECT seq FROM event_chain WHERE project_id = $1 ORDER BY chain_pos DESC LIMIT 1', [projectId]);
      await db.query('DELETE FROM event_chain WHERE seq = $1', [rows[0].seq]);
      expect(await verifyEventChain(db, projectId)).toMatchObject({ ok: false, broken_at_seq: Number(rows[0].seq) });
    });
  });
});
