/**
 * tollgate_record_calls inserts a batch's call records in one statement (migration 0114) and
 * answers, per call, whether its row was recorded now. A call whose row exists already (a retried
 * record, reconciliation racing a slow process), or whose execution came earlier in the same batch,
 * records nothing else: no second settlement, no second record (whose events derive from it).
 */
import { createGovernedCallActivities } from '../../../activities/governed-call';
import { callInput, instantProvider } from '../../../bench/lib/governed-calls';
import { systemClock } from '../../../src/clock';
import type { Db } from '../../../src/db/pool';
import { createGovernance } from '../../../src/governance';
import { createLogger } from '../../../src/logger';
import { recordEvents } from '../../../src/executions/lifecycle-events';
import type { RecordColumns } from '../../../src/executions/lifecycle';
import { pricing } from '../../../src/pricing';
import { projectWithPolicy, testPool } from '../../unit/governance/helpers';

describe('tollgate_record_calls (real PostgreSQL)', () => {
  let db: Db;
  beforeAll(() => {
    db = testPool(8);
  });
  afterAll(async () => {
    await db.end();
  });

  it('records an execution once when the same call is recorded twice in one batch and again later', async () => {
    const projectId = await projectWithPolicy(db, {});
    const calls = createGovernedCallActivities({ db, clock: systemClock, logger: createLogger('warn'), governance: createGovernance({ db, clock: systemClock }), pricing, providers: instantProvider(), recordCommit: 'sync' });
    const a = callInput(projectId);
    const b = callInput(projectId);
    const govern = (x: typeof a) => calls.govern({ input: x.input, request: x.request, route: 'executions', inspectableText: [x.prompt], permitMetadata: {}, inProcess: {} });
    const [govA, govB] = [await govern(a), await govern(b)];
    expect([govA.decision, govB.decision]).toEqual(['allow', 'allow']);
    const outA = (await calls.dispatch(a.input)).outcome;
    const outB = (await calls.dispatch(b.input)).outcome;

    // Submitted in the same turn, the three records share one batch: b's second copy meets its first in one statement.
    const recorded = await Promise.all([
      calls.record(a.input, { kind: 'dispatched', gov: govA, outcome: outA }),
      calls.record(b.input, { kind: 'dispatched', gov: govB, outcome: outB }),
      calls.record(b.input, { kind: 'dispatched', gov: govB, outcome: outB }),
    ]);
    // Later, with b's row stored: nothing is written, the stored envelope comes back.
    const again = await calls.record(b.input, { kind: 'dispatched', gov: govB, outcome: outB });
    expect(recorded[2]).toEqual(recorded[1]);
    expect(again).toEqual(recorded[1]);

    const { rows: inserted } = await db.query<{ id: string }>('SELECT id FROM calls WHERE project_id = $1 ORDER BY id', [projectId]);
    expect(inserted.map((e) => e.id).sort()).toEqual([a.input.executionId, b.input.executionId].sort());
    // One record each, so one completion each: the events derive from the record (none is stored).
    const { rows: stored } = await db.query("SELECT 1 FROM events WHERE project_id = $1 AND event_type IN ('request.completed', 'usage.recorded')", [projectId]);
    expect(stored).toHaveLength(0);
    const { rows: records } = await db.query<RecordColumns>('SELECT * FROM calls WHERE project_id = $1', [projectId]);
    const completions = records.map((r) => [r.permit_id, recordEvents(r, null).filter((e) => ['request.completed', 'usage.recorded'].includes(e.event_type)).length]);
    expect(completions.sort()).toEqual([[a.input.permitId, 2], [b.input.permitId, 2]].sort());
    expect(records.every((r) => r.seq !== null)).toBe(true);
    const { rows: permits } = await db.query<{ state: string; actual: string }>(
      "SELECT reservation_state AS state, actual_cost_micros AS actual FROM permits WHERE project_id = $1 AND decision = 'allow'",
      [projectId],
    );
    expect(permits.map((p) => p.state)).toEqual(['settled', 'settled']);
    const settledTotal = permits.reduce((sum, p) => sum + Number(p.actual), 0);
    expect(settledTotal).toBeGreaterThan(0);
    // Each period's counter holds both calls' settlements once, and nothing reserved.
    const { rows: counters } = await db.query<{ kind: string; reserved: string; settled: string; requests: string }>(
      'SELECT period_kind AS kind, reserved_micros AS reserved, settled_micros AS settled, requests FROM spend_counters WHERE project_id = $1',
      [projectId],
    );
    expect(counters.length).toBeGreaterThan(0);
    for (const c of counters) expect([c.kind, Number(c.reserved), Number(c.settled), Number(c.requests)]).toEqual([c.kind, 0, settledTotal, 2]);
    // Recorded: no permit is marked in flight any more.
    const { rows: inflight } = await db.query('SELECT 1 FROM permits WHERE project_id = $1 AND closing IS NOT NULL', [projectId]);
    expect(inflight).toHaveLength(0);
  });
});
