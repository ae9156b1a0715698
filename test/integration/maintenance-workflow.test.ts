import { startTestTollgate, createTestProject } from '../support/tollgate';
import { claimIdempotencyKey } from '../../src/db/repositories/idempotency';

describe('idempotencyCleanupWorkflow on the real dev server', () => {
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  beforeAll(async () => {
    tg = await startTestTollgate({ role: 'worker' });
  });
  afterAll(async () => tg?.close());

  it('purges expired idempotency keys and keeps live ones', async () => {
    const { project } = await createTestProject(tg.db);
    for (const key of ['old-1', 'old-2', 'live']) {
      const claim = await claimIdempotencyKey(tg.db, { projectId: project.id, scope: 'test', key, requestHash: 'h', retentionHours: 1 });
      expect(claim.outcome).toBe('claimed');
    }
    await tg.db.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 minute' WHERE project_id = $1 AND key LIKE 'old-%'`, [project.id]);

    const handle = await tg.temporal.client.workflow.start('idempotencyCleanupWorkflow', {
      taskQueue: tg.config.temporal.taskQueue,
      workflowId: `cleanup-test-${project.id}`,
      args: [{ intervalSeconds: 1, roundsPerRun: 1 }],
    });
    const keys = async () =>
      (await tg.db.query('SELECT key FROM idempotency_keys WHERE project_id = $1 ORDER BY key', [project.id])).rows.map((r) => r.key);
    const deadline = Date.now() + 20_000;
    while ((await keys()).length > 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await keys()).toEqual(['live']);
    // After one round the run continues as new, so the workflow's history stays bounded.
    const firstRun = tg.temporal.client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId);
    while ((await firstRun.describe()).status.name === 'RUNNING' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect((await firstRun.describe()).status.name).toBe('CONTINUED_AS_NEW');
    await tg.temporal.client.workflow.getHandle(handle.workflowId).terminate('test done');
  });

  it('a second claim with the same payload sees in_flight, a different payload conflicts', async () => {
    const { project } = await createTestProject(tg.db);
    const base = { projectId: project.id, scope: 'test', key: 'k', retentionHours: 1 };
    expect((await claimIdempotencyKey(tg.db, { ...base, requestHash: 'a', resourceId: 'r1' })).outcome).toBe('claimed');
    expect(await claimIdempotencyKey(tg.db, { ...base, requestHash: 'a' })).toEqual({ outcome: 'in_flight', resourceId: 'r1' });
    expect(await claimIdempotencyKey(tg.db, { ...base, requestHash: 'b' })).toEqual({ outcome: 'conflict' });
  });
});

describe('reservationExpiryWorkflow on the real dev server', () => {
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  beforeAll(async () => {
    tg = await startTestTollgate({ role: 'worker' });
  });
  afterAll(async () => tg?.close());

  it('releases the reservation of a permit that expired unsettled, and leaves live ones active', async () => {
    const { createGovernance } = await import('../../src/governance');
    const { findPermit } = await import('../../src/db/repositories/permits');
    const { project } = await createTestProject(tg.db);
    const governance = createGovernance({ db: tg.db, clock: { now: () => new Date() } });
    const request = (requestId: string) => ({
      projectId: project.id,
      requestId,
      route: 'permits',
      operation: 'generate.text' as const,
      provider: 'openai' as const,
      model: 'gpt-4o-mini',
      estimatedInputTokens: 100,
      estimatedOutputTokens: 100,
      estimatedCostMicros: 500,
    });
    const stale = await governance.evaluate(request('req_stale'), { persist: true, ttlSeconds: 1 });
    const live = await governance.evaluate(request('req_live'), { persist: true, ttlSeconds: 3600 });
    expect([stale.decision, live.decision]).toEqual(['allow', 'allow']);
    await new Promise((r) => setTimeout(r, 1100));

    const handle = await tg.temporal.client.workflow.start('reservationExpiryWorkflow', {
      taskQueue: tg.config.temporal.taskQueue,
      workflowId: `reservation-expiry-test-${project.id}`,
      args: [{ intervalSeconds: 1, roundsPerRun: 5 }],
    });
    const deadline = Date.now() + 20_000;
    let state = (await findPermit(tg.db, project.id, stale.permit_id))!.reservation_state;
    while (state === 'active' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      state = (await findPermit(tg.db, project.id, stale.permit_id))!.reservation_state;
    }
    expect(state).toBe('expired');
    expect((await findPermit(tg.db, project.id, live.permit_id))!.reservation_state).toBe('active');
    await handle.terminate('test done');
  });
});
