import { startTestTollgate, createTestProject, http, TestProject } from '../../support/tollgate';
import { declareIntent, IntentServiceDeps } from '../../../src/intents/service';
import { systemClock } from '../../../src/clock';
import { IntentReservations } from '../../../src/intents/reservations';
import { stateQuery } from '../../../workflows/intent-messages';
import { insertPermits, TestTollgate, waitFor } from './helpers';

describe('call reservations against intents', () => {
  let tg: TestTollgate;
  let call: ReturnType<typeof http>;
  let p: TestProject;
  let svc: IntentServiceDeps;

  beforeAll(async () => {
    tg = await startTestTollgate();
    call = http(tg.url!);
    svc = { db: tg.db, config: tg.config, clock: systemClock, logger: tg.logger, temporal: { client: tg.temporal.client, taskQueue: tg.config.temporal.taskQueue } };
  });
  beforeEach(async () => {
    p = await createTestProject(tg.db);
  });
  afterAll(async () => tg?.close());

  const who = () => ({ projectId: p.project.id, keyId: 'key_test' });

  it('200 concurrent reservations on max_calls 50: exactly 50 granted, in few Updates', async () => {
    const declared = await call('POST', '/v1/workflows', { key: p.clientKey, body: { workflow_id: 'ceiling', intent: { max_calls: 50 } } });
    expect(declared.status).toBe(201);
    const r = new IntentReservations({ client: tg.temporal.client, db: tg.db });
    const outcomes = await Promise.all(Array.from({ length: 200 }, () => r.reserveCall(p.project.id, 'ceiling')));
    expect(outcomes.filter((o) => o.granted)).toHaveLength(50);
    expect(outcomes.filter((o) => !o.granted && o.reason === 'ceiling_reached')).toHaveLength(150);
    expect(r.updatesSent).toBeLessThan(20);
    const read = await call('GET', '/v1/workflows/ceiling', { key: p.clientKey });
    expect(read.json).toMatchObject({ actual_calls: 50, drift: { max_calls_exceeded: true } });
    // The counter reaches PostgreSQL (throttled writes).
    await waitFor(
      async () => (await tg.db.query('SELECT actual_calls FROM intents WHERE project_id = $1', [p.project.id])).rows[0].actual_calls,
      (n) => n === 50,
    );
  });

  it('several API processes (reservation clients) never over-grant together', async () => {
    await call('POST', '/v1/workflows', { key: p.clientKey, body: { workflow_id: 'multi', intent: { max_calls: 30 } } });
    const clients = Array.from({ length: 4 }, () => new IntentReservations({ client: tg.temporal.client, db: tg.db }));
    const outcomes = await Promise.all(Array.from({ length: 120 }, (_, i) => clients[i % 4].reserveCall(p.project.id, 'multi')));
    expect(outcomes.filter((o) => o.granted)).toHaveLength(30);
    // Raising the ceiling by amendment grants more.
    expect((await call('POST', '/v1/workflows/multi/amend', { key: p.clientKey, body: { if_match_version: 1, new_max_calls: 35 } })).status).toBe(200);
    const more = await Promise.all(Array.from({ length: 10 }, () => clients[0].reserveCall(p.project.id, 'multi')));
    expect(more.filter((o) => o.granted)).toHaveLength(5);
  });

  it('continue-as-new keeps the counter, the version and the ceiling', async () => {
    await declareIntent(svc, who(), { workflow_id: 'can', intent: { max_calls: 100 } }, { canAfterUpdates: 5 });
    const handle = tg.temporal.client.workflow.getHandle(`intent:${p.project.id}:can`);
    const firstRunId = (await handle.describe()).runId;
    const r = new IntentReservations({ client: tg.temporal.client, db: tg.db });
    for (let i = 0; i < 8; i++) expect((await r.reserveCall(p.project.id, 'can')).granted).toBe(true);
    const amended = await call('POST', '/v1/workflows/can/amend', { key: p.clientKey, body: { if_match_version: 1, new_max_calls: 60 } });
    expect(amended.status).toBe(200);
    for (let i = 0; i < 8; i++) expect((await r.reserveCall(p.project.id, 'can')).granted).toBe(true);
    // Concurrent reservations across run boundaries still stop at the ceiling.
    const burst = await Promise.all(Array.from({ length: 100 }, () => r.reserveCall(p.project.id, 'can')));
    expect(burst.filter((o) => o.granted)).toHaveLength(60 - 16);

    // Calls are leased in blocks, so fewer Updates than calls: at least one continue-as-new.
    const state = await waitFor(() => handle.query(stateQuery), (s) => s.run >= 2);
    expect(state.run).toBeGreaterThanOrEqual(2);
    expect(state).toMatchObject({ version: 2, actualCalls: 60, maxCalls: 60, status: 'active' });
    expect((await tg.temporal.client.workflow.getHandle(handle.workflowId, firstRunId).describe()).status.name).toBe('CONTINUED_AS_NEW');
    // Live state by query; when the query is slow (a loaded machine) the persisted counter, which
    // the workflow writes about every second, answers and catches up: poll briefly.
    const read = await waitFor(
      () => call('GET', '/v1/workflows/can', { key: p.clientKey }),
      (r) => r.json?.actual_calls === 60,
    );
    expect(read.json).toMatchObject({ version: 2, actual_calls: 60, max_calls: 60 });
    expect(read.json.amendments).toHaveLength(1);
    // Search attributes carry over to the new run.
    const desc = await handle.describe();
    expect(desc.runId).not.toBe(firstRunId);
    expect(desc.typedSearchAttributes.get({ name: 'TollgateWorkflowIntentId', type: 'KEYWORD' } as never)).toBe('can');
    await insertPermits(tg.db, p.project.id, 'can', 60);
    const done = await call('POST', '/v1/workflows/can/complete', { key: p.clientKey, body: {} });
    expect(done.json).toMatchObject({ version: 2, actual_calls: 60, reconciliation: { cached_actual_calls: 60, counter_divergence_detected: false } });
  });

  it('a worker restart in the middle of the workflow loses nothing', async () => {
    const first = await startTestTollgate();
    const queue = first.config.temporal.taskQueue;
    const api1 = http(first.url!);
    const r = new IntentReservations({ client: tg.temporal.client, db: tg.db });
    let second: TestTollgate | null = null;
    try {
      expect((await api1('POST', '/v1/workflows', { key: p.clientKey, body: { workflow_id: 'restart', intent: { expected_calls: 10, max_calls: 12, max_duration_seconds: 3600 } } })).status).toBe(201);
      for (let i = 0; i < 7; i++) expect((await r.reserveCall(p.project.id, 'restart')).granted).toBe(true);
      expect((await api1('POST', '/v1/workflows/restart/amend', { key: p.clientKey, body: { if_match_version: 1, new_max_calls: 15 } })).status).toBe(200);
      await first.close();

      // While no worker serves the queue, a reservation waits rather than failing.
      const pending = Promise.all(Array.from({ length: 10 }, () => r.reserveCall(p.project.id, 'restart')));
      await new Promise((res) => setTimeout(res, 500));

      second = await startTestTollgate({ env: { TEMPORAL_TASK_QUEUE: queue } });
      const outcomes = await pending;
      expect(outcomes.filter((o) => o.granted)).toHaveLength(8);
      const api2 = http(second.url!);
      const read = await api2('GET', '/v1/workflows/restart', { key: p.clientKey });
      expect(read.json).toMatchObject({ status: 'active', version: 2, actual_calls: 15, expected_calls: 10, max_calls: 15, drift: { expected_calls_exceeded: true, max_calls_exceeded: true } });
      expect(read.json.amendments).toHaveLength(1);
      const stale = await api2('POST', '/v1/workflows/restart/amend', { key: p.clientKey, body: { if_match_version: 1, new_max_calls: 20 } });
      expect(stale.json.error.details).toEqual({ current_version: 2, if_match_version: 1 });
      await insertPermits(tg.db, p.project.id, 'restart', 15);
      const done = await api2('POST', '/v1/workflows/restart/complete', { key: p.clientKey, body: {} });
      expect(done.json).toMatchObject({ status: 'completed', version: 2, actual_calls: 15, reconciliation: { authoritative_actual_calls: 15, cached_actual_calls: 15, counter_divergence_detected: false } });
    } finally {
      await first.close();
      await second?.close();
    }
  });
});
