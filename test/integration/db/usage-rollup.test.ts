/**
 * The usage rollup (migration 0340) against the permits it sums: the Spend page's usage read
 * through the rollup (`settledUsage`) equals the exact aggregate of the settled permits it replaced,
 * by day, provider, model and API key, for windows of every alignment (whole hours, edges, a month
 * to now, windows ending after now and in the past): for records folded in one sequencer round or
 * two, records not chained yet, action permits closed out by `POST /v1/permits/{id}/usage`, a
 * governed call's permit settled by a closeout after its record released it, and a project whose
 * permits partly predate its rollup start.
 *
 * On a database of its own: the sequencer is run by hand here, and other test files' Tollgates
 * would otherwise chain (and fold) these projects' records.
 */
import { createGovernedCallActivities } from '../../../activities/governed-call';
import { callInput } from '../../../bench/lib/governed-calls';
import { fixedClock } from '../../../src/clock';
import type { Db } from '../../../src/db/pool';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import { insertUsageReport } from '../../../src/db/repositories/permit-usage-reports';
import { insertPermit } from '../../../src/db/repositories/permits';
import { createProject } from '../../../src/db/repositories/projects';
import { planUsage, settledUsage } from '../../../src/db/repositories/settled-usage';
import { createGovernance } from '../../../src/governance';
import { newId } from '../../../src/ids';
import { createLogger } from '../../../src/logger';
import { pricing } from '../../../src/pricing';
import { ownDatabasePool } from '../../support/own-database';
import { answeringProvider, seededRandom } from '../../support/rollup-fixtures';

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const KEYS = ['key_a', 'key_b', 'key_c'];
const MODELS = [
  { provider: 'openai' as const, model: 'gpt-4o-mini' },
  { provider: 'anthropic' as const, model: 'claude-3-5-haiku-latest' },
];

/** The aggregate of the settled permits, as GET /v1/projects/{id}/usage computed it before the rollup. */
async function exactUsage(db: Db, projectId: string, from: Date, to: Date) {
  const { rows } = await db.query(
    `SELECT to_char(settled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, provider, model, metadata->>'key_id' AS api_key_id,
            count(*)::int AS requests, coalesce(sum(actual_input_tokens), 0)::bigint AS input_tokens,
            coalesce(sum(actual_output_tokens), 0)::bigint AS output_tokens, coalesce(sum(actual_cost_micros), 0)::bigint AS cost_usd_micros
       FROM permits
      WHERE project_id = $1 AND reservation_state = 'settled' AND settled_at >= $2 AND settled_at < $3
        AND issued_at >= $2::timestamptz - interval '2 days' AND issued_at < $3
      GROUP BY 1, 2, 3, 4
      ORDER BY 1, 2, 3, 4`,
    [projectId, from, to],
  );
  return rows.map((r) => ({ ...r, input_tokens: Number(r.input_tokens), output_tokens: Number(r.output_tokens), cost_usd_micros: Number(r.cost_usd_micros) }));
}

describe('the usage rollup', () => {
  const own = ownDatabasePool('usage_rollup');

  /**
   * `n` governed calls through the in-process pipeline, each issued at `now - ago()` over two
   * models and three keys, then settled (permit and record) two seconds after its issue, as the
   * record's statement does at its own time. Not chained: the caller runs the sequencer.
   */
  async function govern(db: Db, projectId: string, n: number, rnd: () => number, ago: () => number): Promise<void> {
    const clock = fixedClock(new Date());
    const calls = createGovernedCallActivities({ db, clock, logger: createLogger('warn'), governance: createGovernance({ db, clock }), pricing, providers: answeringProvider, recordCommit: 'sync' });
    for (let i = 0; i < n; i++) {
      const at = Date.now() - ago();
      clock.set(new Date(at));
      const c = callInput(projectId);
      c.input.createdAt = new Date(at - 3).toISOString();
      const m = MODELS[Math.floor(rnd() * MODELS.length)];
      c.input.routing = { ...c.input.routing, requested_provider: m.provider, requested_model: m.model, primary: m };
      c.request = { ...c.request, ...m };
      const key = KEYS[Math.floor(rnd() * KEYS.length)];
      const gov = await calls.govern({ input: c.input, request: c.request, route: 'executions', inspectableText: [c.prompt], permitMetadata: { key_id: key }, inProcess: {} });
      if (gov.decision !== 'allow') {
        await calls.record(c.input, { kind: 'governed_out', gov });
        continue;
      }
      const { outcome } = await calls.dispatch(c.input);
      await calls.record(c.input, { kind: 'dispatched', gov, outcome });
    }
    // The record's statement settles at the database's now(); spread over the permits' issue times.
    await db.query(
      `UPDATE permits p SET settled_at = p.issued_at + interval '2 seconds'
        WHERE p.project_id = $1 AND p.reservation_state = 'settled'
          AND EXISTS (SELECT 1 FROM calls x WHERE x.permit_id = p.id AND x.recorded_at = p.settled_at)`,
      [projectId],
    );
    await db.query(
      `UPDATE calls x SET recorded_at = p.settled_at FROM permits p
        WHERE x.project_id = $1 AND p.id = x.permit_id AND p.reservation_state = 'settled' AND p.settled_at = p.issued_at + interval '2 seconds'`,
      [projectId],
    );
  }

  /** Permit-first calls: action permits (`POST /v1/permits`) settled by their usage closeout at `ago()` after their issue. */
  async function closedOutActions(db: Db, projectId: string, n: number, ago: () => number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const issued = new Date(Date.now() - ago());
      const p = await insertPermit(db, {
        id: newId('permit'),
        project_id: projectId,
        route: 'permits',
        decision: 'allow',
        reason_code: 'policy.active_policy_candidate',
        display_reason: 'test',
        decision_details: { decision: 'allow', code: 'test', reason: 'test', reason_detail: { category: 'policy', kind: 'test', outcome: 'test' } },
        actions: [],
        issued_at: issued,
        provider: 'openai',
        model: 'gpt-4o-mini',
        reservation_state: 'active',
        reserved_cost_micros: 500,
        metadata: { key_id: KEYS[i % KEYS.length] },
      });
      await closeOut(db, p.id, projectId, new Date(issued.getTime() + (i % 4) * 20 * MINUTE + 1_234));
    }
  }

  /** A usage closeout at `at`: the permit settled at the client's time, and its report. */
  async function closeOut(db: Db, permitId: string, projectId: string, at: Date): Promise<void> {
    await createGovernance({ db, clock: fixedClock(at) }).settle(permitId, { costMicros: 321, inputTokens: 7, outputTokens: 3 });
    await insertUsageReport(db, {
      permit_id: permitId, project_id: projectId, usage_idempotency_key: newId('usage'), request_hash: 'test', status: 'completed',
      input_tokens: 7, output_tokens: 3, billed_cost_micros: 321, verification: null, error: null, occurred_at: null,
      reported_at: new Date(at.getTime() + 5), reported_by: 'test', response: {},
    });
  }

  /** Governed calls' permits released by their record (a failed call), chosen among the records not chained yet. */
  async function releasePending(db: Db, projectId: string, n: number): Promise<{ id: string; issued_at: Date }[]> {
    const { rows } = await db.query<{ id: string; issued_at: Date }>(
      `UPDATE permits SET reservation_state = 'released', settled_at = NULL, actual_cost_micros = NULL, actual_input_tokens = NULL, actual_output_tokens = NULL
        WHERE id IN (SELECT x.permit_id FROM event_chain_pending e JOIN calls x ON x.project_id = e.project_id AND x.seq = ANY(e.seqs)
                      WHERE e.project_id = $1 AND x.status = 'completed' ORDER BY x.id LIMIT $2)
        RETURNING id, issued_at`,
      [projectId, n],
    );
    return rows;
  }

  /** Their closeouts, 90 seconds after their issue. */
  async function closeOutReleased(db: Db, projectId: string, permits: { id: string; issued_at: Date }[]): Promise<void> {
    for (const r of permits) await closeOut(db, r.id, projectId, new Date(r.issued_at.getTime() + 90_000));
  }

  /** `until` null: the Spend page's window, which ends when it is read (the later of now and the database's clock). */
  async function expectSameAsExact(projectId: string, from: Date, until: Date | null): Promise<number> {
    const asked = until ?? new Date();
    const { to, rows: fast } = await settledUsage(own.db, projectId, { from, to: asked, untilNow: until === null });
    if (until === null) expect(to.getTime()).toBeGreaterThanOrEqual(asked.getTime());
    else expect(to).toEqual(until);
    const exact = await exactUsage(own.db, projectId, from, to);
    const label = `${from.toISOString()} – ${to.toISOString()}`;
    expect([label, fast]).toEqual([label, exact]);
    return fast.reduce((s, r) => s + r.requests, 0);
  }

  /** Windows of every alignment the plan distinguishes around `now`, ending after it (the Spend page's) and before. */
  function windows(now: number): [Date, Date | null][] {
    const hour = Math.floor(now / HOUR) * HOUR;
    const day = Math.floor(now / DAY) * DAY;
    const d = new Date(now);
    const month = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    const odd = now - 7_777;
    return [
      [new Date(Math.min(month, now - 4 * DAY)), null], // the Spend page's: the month (at least four days) until read
      [new Date(Math.min(month, now - 4 * DAY)), new Date(now + 1_000)], // ending after now, through the last hour's row
      [new Date(hour - 3 * DAY), new Date(hour + HOUR)], // whole hours, ending after now
      [new Date(hour - 2 * DAY), new Date(hour - 5 * HOUR)], // whole hours in the past
      [new Date(odd - 3 * DAY - 17 * MINUTE), new Date(odd - 5 * HOUR + 13_000)], // edges in the past
      [new Date(odd - DAY - 500), new Date(odd)], // ending just before now: the last hour from the permits
      [new Date(odd - 40 * MINUTE), new Date(now + MINUTE)], // within an hour or two
      [new Date(hour - DAY), new Date(hour)],
      [new Date(day - 3 * DAY), null], // whole days, today's hours, the current hour
      [new Date(day - 3 * DAY), new Date(day - DAY)], // whole days in the past
      [new Date(day - 3 * DAY - 2 * HOUR), new Date(day + 30 * MINUTE)], // hours, days, hours and a past tail
    ];
  }

  it('equals the settled permits’ aggregate, folded in one round or two, with records pending, closeouts and permits without a record', async () => {
    const project = await createProject(own.db, { name: 'usage rollup', plan: 'production' });
    const rnd = seededRandom(42);
    const ago = () => rnd() * 3.5 * DAY;
    await govern(own.db, project.id, 120, rnd, ago);
    await closedOutActions(own.db, project.id, 9, ago);
    // Released by its record, closed out before the sequencer folds it: not in the rollup.
    const early = await releasePending(own.db, project.id, 2);
    await closeOutReleased(own.db, project.id, early);
    await chainAllProjectEvents(own.db, project.id);
    const { rows: sums } = await own.db.query(
      `SELECT (SELECT coalesce(sum(requests), 0) FROM usage_rollup WHERE project_id = $1 AND width = 3600)::int AS rolled,
              (SELECT coalesce(sum(requests), 0) FROM usage_rollup WHERE project_id = $1 AND width = 86400)::int AS rolled_days,
              (SELECT count(*) FROM permits WHERE project_id = $1 AND route = 'executions' AND reservation_state = 'settled')::int AS calls,
              (SELECT count(DISTINCT metadata->>'key_id') FROM permits WHERE project_id = $1 AND route = 'executions')::int AS keys,
              (SELECT count(DISTINCT model) FROM permits WHERE project_id = $1 AND route = 'executions')::int AS models`,
      [project.id],
    );
    expect(sums[0]).toEqual({ rolled: sums[0].calls - early.length, rolled_days: sums[0].calls - early.length, calls: sums[0].calls, keys: KEYS.length, models: MODELS.length });
    const now = Date.now();
    for (const [from, to] of windows(now)) await expectSameAsExact(project.id, from, to);

    // Records not chained yet and more action permits.
    await govern(own.db, project.id, 60, rnd, ago);
    await closedOutActions(own.db, project.id, 6, ago);
    const { rows: pending } = await own.db.query('SELECT count(*)::int AS n FROM event_chain_pending WHERE project_id = $1', [project.id]);
    expect(pending[0].n).toBeGreaterThan(0);
    for (const [from, to] of windows(now)) await expectSameAsExact(project.id, from, to);
    // Released by its record, folded, then closed out.
    const late = await releasePending(own.db, project.id, 2);
    expect(late).toHaveLength(2);
    await chainAllProjectEvents(own.db, project.id);
    await closeOutReleased(own.db, project.id, late);
    let seen = 0;
    for (const [from, to] of windows(now)) seen = Math.max(seen, await expectSameAsExact(project.id, from, to));
    const { rows: all } = await own.db.query(
      "SELECT count(*)::int AS n FROM permits WHERE project_id = $1 AND reservation_state = 'settled' AND settled_at >= $2",
      [project.id, windows(now)[0][0]],
    );
    expect(seen).toBe(all[0].n);
  });

  it('leaves out permits settled before the project’s rollup start, and reads them from the permits', async () => {
    const project = await createProject(own.db, { name: 'usage rollup start', plan: 'production' });
    const started = new Date(Date.now() - 30 * HOUR - 17_000);
    await own.db.query('INSERT INTO usage_rollup_starts (project_id, started_at) VALUES ($1, $2)', [project.id, started]);
    const rnd = seededRandom(7);
    await govern(own.db, project.id, 60, rnd, () => rnd() * 3 * DAY);
    await chainAllProjectEvents(own.db, project.id);
    const { rows } = await own.db.query(
      `SELECT (SELECT count(*) FROM permits WHERE project_id = $1 AND reservation_state = 'settled' AND settled_at < $2)::int AS before,
              (SELECT count(*) FROM permits WHERE project_id = $1 AND reservation_state = 'settled' AND settled_at >= $2)::int AS after,
              (SELECT coalesce(sum(requests), 0) FROM usage_rollup WHERE project_id = $1 AND width = 86400)::int AS rolled`,
      [project.id, started],
    );
    expect(rows[0].before).toBeGreaterThan(0);
    expect(rows[0].rolled).toBe(rows[0].after);
    for (const [from, to] of windows(Date.now())) await expectSameAsExact(project.id, from, to);
  });

  it('plans whole days and hours from the rollup, the last partial hour apart, and the rest from the permits', () => {
    const t0 = Date.UTC(2026, 10, 1);
    expect(planUsage(t0, t0 + 5 * HOUR, null)).toEqual({ raw: [], hours: [[t0, t0 + 5 * HOUR]], days: [], tail: [] });
    expect(planUsage(t0, t0 + 5 * HOUR + 7, null)).toEqual({ raw: [], hours: [[t0, t0 + 5 * HOUR]], days: [], tail: [[t0 + 5 * HOUR, t0 + 5 * HOUR + 7]] });
    expect(planUsage(t0 + 1, t0 + 5 * HOUR, null)).toEqual({ raw: [[t0 + 1, t0 + HOUR]], hours: [[t0 + HOUR, t0 + 5 * HOUR]], days: [], tail: [] });
    // The Spend page's month: whole days, the hours of today, the current hour's row.
    expect(planUsage(t0, t0 + 27 * DAY + 10 * HOUR + 5 * MINUTE, null)).toEqual({
      raw: [], hours: [[t0 + 27 * DAY, t0 + 27 * DAY + 10 * HOUR]], days: [[t0, t0 + 27 * DAY]], tail: [[t0 + 27 * DAY + 10 * HOUR, t0 + 27 * DAY + 10 * HOUR + 5 * MINUTE]],
    });
    expect(planUsage(t0 - 3 * HOUR - 1, t0 + DAY + 2 * HOUR, null)).toEqual({
      raw: [[t0 - 3 * HOUR - 1, t0 - 3 * HOUR]], hours: [[t0 - 3 * HOUR, t0], [t0 + DAY, t0 + DAY + 2 * HOUR]], days: [[t0, t0 + DAY]], tail: [],
    });
    // Before the start from the permits; the start's partial hour too.
    expect(planUsage(t0, t0 + 5 * HOUR, t0 + 90 * MINUTE)).toEqual({ raw: [[t0, t0 + 90 * MINUTE], [t0 + 90 * MINUTE, t0 + 2 * HOUR]], hours: [[t0 + 2 * HOUR, t0 + 5 * HOUR]], days: [], tail: [] });
    // Within one hour the rollup holds only from its start on: from the permits.
    expect(planUsage(t0 + 10 * MINUTE, t0 + 50 * MINUTE, t0 + 20 * MINUTE)).toEqual({ raw: [[t0 + 10 * MINUTE, t0 + 20 * MINUTE], [t0 + 20 * MINUTE, t0 + 50 * MINUTE]], hours: [], days: [], tail: [] });
    expect(planUsage(t0, t0 + HOUR, t0 + 2 * HOUR)).toEqual({ raw: [[t0, t0 + HOUR]], hours: [], days: [], tail: [] });
  });
});
