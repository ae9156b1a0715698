import { Worker } from '@temporalio/worker';
import { startTestTollgate, createTestProject, http, TestProject } from '../../support/tollgate';
import { IntentReservations } from '../../../src/intents/reservations';
import { ReservationOutcome } from '../../../src/intents/reservation-outcome';
import { IntentState, LEASE_SETTLE_GRACE_MS, LEASE_TTL_MS, leaseCallsUpdate, stateQuery } from '../../../workflows/intent-messages';
import { insertPermits, TestTollgate, waitFor } from './helpers';

/**
 * Leased call quotas (the default mode): two reservation clients stand for two API processes
 * sharing one intent (each with its own holder id and its own LISTEN connection for revocations).
 */
describe('call leases on intents', () => {
  let tg: TestTollgate;
  let call: ReturnType<typeof http>;
  let p: TestProject;
  const clients: IntentReservations[] = [];

  beforeAll(async () => {
    tg = await startTestTollgate();
    call = http(tg.url!);
  });
  beforeEach(async () => {
    p = await createTestProject(tg.db);
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  afterAll(async () => tg?.close());

  /** Leases are kept while idle unless `idleMs` says otherwise (a loaded machine must not return them before the test looks). */
  const twoProcesses = async (idleMs: [number, number] = [600_000, 600_000]): Promise<[IntentReservations, IntentReservations]> => {
    const made = [0, 1].map((i) => new IntentReservations({ client: tg.temporal.client, db: tg.db, databaseUrl: tg.config.databaseUrl, holder: `process-${i}`, idleMs: idleMs[i] }));
    clients.push(...made);
    await waitFor(async () => made.every((c) => c.listening), (ok) => ok, 10_000, 20);
    return [made[0], made[1]];
  };
  const declare = async (workflow_id: string, intent: Record<string, unknown>) => {
    const res = await call('POST', '/v1/workflows', { key: p.clientKey, body: { workflow_id, intent } });
    expect(res.status).toBe(201);
  };
  const state = (workflowId: string) => tg.temporal.client.workflow.getHandle(`intent:${p.project.id}:${workflowId}`).query(stateQuery);
  const granted = (os: ReservationOutcome[]) => os.filter((o) => o.granted).length;
  /** Takes `n` calls one after the other (a caller with a steady rate: its lease grows past what it uses). */
  const sequential = async (c: IntentReservations, workflowId: string, n: number) => {
    const out: ReservationOutcome[] = [];
    for (let i = 0; i < n; i++) out.push(await c.reserveCall(p.project.id, workflowId));
    return out;
  };
  const leasedUnused = (s: IntentState) => Object.values(s.leases ?? {}).reduce((a, l) => a + l.size - l.used, 0);

  it('exact ceiling with two processes and leases outstanding: 1,000 racing calls on max_calls 600', async () => {
    await declare('race', { max_calls: 600 });
    const [a, b] = await twoProcesses();
    expect(granted(await sequential(a, 'race', 20))).toBe(20);
    expect(granted(await sequential(b, 'race', 20))).toBe(20);
    // Both processes hold leases with calls they have not used (a renewal may still be in flight).
    const holding = () => [a, b].every((c) => c.leases().some((l) => l.size > l.used));
    expect(await waitFor(() => Promise.resolve(holding()), (ok) => ok, 10_000, 50)).toBe(true);
    const before = await state('race');
    expect(Object.keys(before.leases ?? {})).toHaveLength(2);
    expect(leasedUnused(before)).toBeGreaterThan(0);

    const outcomes = await Promise.all(Array.from({ length: 1000 }, (_, i) => (i % 2 ? a : b).reserveCall(p.project.id, 'race')));
    expect(granted(outcomes)).toBe(560);
    expect(outcomes.filter((o) => !o.granted && o.reason === 'ceiling_reached')).toHaveLength(440);
    const after = await state('race');
    // What the processes took is what the workflow counts, and nothing is left leased.
    expect(after.actualCalls).toBe(600);
    expect(after.actualCalls - Object.values(after.leases ?? {}).reduce((s, l) => s + l.used, 0) + Object.values(after.leases ?? {}).reduce((s, l) => s + l.size, 0)).toBeLessThanOrEqual(600);
    expect(granted(await Promise.all([a.reserveCall(p.project.id, 'race'), b.reserveCall(p.project.id, 'race')]))).toBe(0);
  });

  it('amend down below the leased total: the leases are returned before the amendment answers; then the new ceiling holds exactly', async () => {
    await declare('shrink', { max_calls: 1000 });
    const [a, b] = await twoProcesses();
    await sequential(a, 'shrink', 30);
    await sequential(b, 'shrink', 10);
    const before = await state('shrink');
    const leased = Object.values(before.leases ?? {}).reduce((s, l) => s + l.size, 0);
    expect(leased).toBeGreaterThan(40);
    const newMax = 43; // below the leased total, above what was used
    const amended = await call('POST', '/v1/workflows/shrink/amend', { key: p.clientKey, body: { if_match_version: 1, new_max_calls: newMax } });
    expect(amended.status).toBe(200);
    const after = await state('shrink');
    expect(after.maxCalls).toBe(newMax);
    // Returned with what was used: the counter is exact and nothing is leased past the ceiling.
    expect(Object.keys(after.leases ?? {})).toHaveLength(0);
    expect(after.actualCalls).toBe(40);
    const outcomes = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).reserveCall(p.project.id, 'shrink')));
    expect(granted(outcomes)).toBe(3);
    expect((await state('shrink')).actualCalls).toBe(newMax);

    // Amending down below what was already used: nothing more is granted.
    const lower = await call('POST', '/v1/workflows/shrink/amend', { key: p.clientKey, body: { if_match_version: 2, new_max_calls: 10 } });
    expect(lower.status).toBe(200);
    expect(granted(await Promise.all(Array.from({ length: 10 }, () => b.reserveCall(p.project.id, 'shrink'))))).toBe(0);
    // Raising it again grants again, up to the new ceiling.
    expect((await call('POST', '/v1/workflows/shrink/amend', { key: p.clientKey, body: { if_match_version: 3, new_max_calls: 50 } })).status).toBe(200);
    expect(granted(await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).reserveCall(p.project.id, 'shrink'))))).toBe(7);
  });

  it('complete with leases outstanding: the holders report what they used; reconciliation is exact; later calls are not_active', async () => {
    await declare('done', { max_calls: 1000 });
    const [a, b] = await twoProcesses();
    await sequential(a, 'done', 12);
    await sequential(b, 'done', 5);
    expect(leasedUnused(await state('done'))).toBeGreaterThan(0);
    await insertPermits(tg.db, p.project.id, 'done', 17);
    const res = await call('POST', '/v1/workflows/done/complete', { key: p.clientKey, body: {} });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ actual_calls: 17, reconciliation: { authoritative_actual_calls: 17, cached_actual_calls: 17, counter_divergence_detected: false } });
    expect(a.leases()).toHaveLength(0);
    expect(b.leases()).toHaveLength(0);
    expect(await a.reserveCall(p.project.id, 'done')).toEqual({ granted: false, reason: 'not_active' });
    expect(await b.reserveCall(p.project.id, 'done')).toEqual({ granted: false, reason: 'not_active' });
  });

  it('expiry with leases outstanding: no call is taken after the expiry, and the final counter is what the processes took', async () => {
    const [a, b] = await twoProcesses(); // set up first: the expiry runs from the declaration
    await declare('ttl', { max_calls: 100_000, max_duration_seconds: 6 });
    const expiresAt = Date.parse((await call('GET', '/v1/workflows/ttl', { key: p.clientKey })).json.expires_at);
    const takenAt: number[] = [];
    let denied: ReservationOutcome | null = null;
    // Both processes call steadily until they are refused.
    await Promise.all(
      [a, b].map(async (c) => {
        for (;;) {
          // Stamped when asked: a call granted just before the expiry may answer after it.
          const askedAt = Date.now();
          const o = await c.reserveCall(p.project.id, 'ttl');
          if (!o.granted) {
            denied = o;
            return;
          }
          takenAt.push(askedAt);
          await new Promise((r) => setTimeout(r, 5));
        }
      }),
    );
    expect(denied).toEqual({ granted: false, reason: 'not_active' });
    expect(takenAt.length).toBeGreaterThan(20);
    expect(Math.max(...takenAt)).toBeLessThanOrEqual(expiresAt);
    const read = await waitFor(() => call('GET', '/v1/workflows/ttl', { key: p.clientKey }), (r) => r.json.status === 'expired', 15_000);
    expect(read.json).toMatchObject({ status: 'expired', actual_calls: takenAt.length });
    const row = await tg.db.query('SELECT actual_calls FROM intents WHERE project_id = $1 AND workflow_id = $2', [p.project.id, 'ttl']);
    expect(row.rows[0].actual_calls).toBe(takenAt.length);
  });

  it('no wrongful refusal: calls arriving while a renewal is in flight get every call up to the ceiling', async () => {
    await declare('steady', { max_calls: 25 });
    const [a] = await twoProcesses();
    // Each call lands a moment after the previous one, while the renewal it triggered may still be
    // in flight (near the ceiling such a renewal grants nothing; that is no answer for later callers).
    const out: ReservationOutcome[] = [];
    for (let i = 0; i < 30; i++) {
      out.push(await a.reserveCall(p.project.id, 'steady'));
      await new Promise((r) => setTimeout(r, i % 3));
    }
    expect(out.slice(0, 25).every((o) => o.granted)).toBe(true);
    expect(out.slice(25)).toEqual(Array.from({ length: 5 }, () => ({ granted: false, reason: 'ceiling_reached' })));
    expect((await waitFor(() => state('steady'), (s) => s.actualCalls === 25)).actualCalls).toBe(25);
  });

  it('capacity held by a lease whose holder never returns it is reclaimed (deadline + grace, settled from permits) before anyone is refused', async () => {
    await declare('orphan', { max_calls: 10 });
    const handle = tg.temporal.client.workflow.getHandle(`intent:${p.project.id}:orphan`);
    // A holder that takes a block and goes silent (no renewal, no return, no LISTEN).
    const ghost = await handle.executeUpdate(leaseCallsUpdate, { args: [{ leaseId: 'lse_ghost', holder: 'ghost', used: 0, need: 1, want: 10 }] });
    expect(ghost.size).toBeGreaterThan(1);
    // It used two calls (their permits name the lease) before it died.
    for (let i = 0; i < 2; i++) {
      await tg.db.query(
        `INSERT INTO permits (id, project_id, route, workflow_id, decision, reason_code, display_reason, decision_details, metadata, issued_at)
         VALUES ($1, $2, 'executions', 'orphan', 'allow', 'policy.active_policy_candidate', 'test', '{}'::jsonb, $3::jsonb, now())`,
        [`permit_ghost_${p.project.id}_${i}`, p.project.id, JSON.stringify({ intent_lease: 'lse_ghost' })],
      );
    }
    const [a, b] = await twoProcesses();
    const t0 = Date.now();
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).reserveCall(p.project.id, 'orphan')));
    const waitedMs = Date.now() - t0;
    // Everything the ghost did not use, and nothing more.
    expect(granted(outcomes)).toBe(8);
    expect(outcomes.filter((o) => !o.granted).every((o) => o.reason === 'ceiling_reached')).toBe(true);
    const s = await state('orphan');
    expect(s.leases?.lse_ghost).toBeUndefined();
    expect(s.actualCalls - Object.values(s.leases ?? {}).reduce((n, l) => n + l.used, 0) + Object.values(s.leases ?? {}).reduce((n, l) => n + l.size, 0)).toBeLessThanOrEqual(10);
    expect((await waitFor(() => state('orphan'), (x) => x.actualCalls === 10)).actualCalls).toBe(10);
    process.stdout.write(`orphaned lease reclaimed; callers waited ${waitedMs} ms (bound ${LEASE_TTL_MS + LEASE_SETTLE_GRACE_MS} ms + round trips)\n`);
  });

  it('a lease is returned when its process goes idle, and at shutdown', async () => {
    await declare('idle', { max_calls: 1000 });
    // process-0 returns its lease after 500 ms without a call (the default); process-1 keeps its own.
    const [a, b] = await twoProcesses([500, 600_000]);
    await sequential(b, 'idle', 3);
    await sequential(a, 'idle', 8);
    const idle = await waitFor(() => state('idle'), (s) => Object.values(s.leases ?? {}).every((l) => l.holder === 'process-1'), 20_000, 50);
    expect(Object.values(idle.leases ?? {}).map((l) => l.holder)).toEqual(['process-1']);
    expect(a.leases()).toEqual([]);
    expect(idle.actualCalls).toBeGreaterThanOrEqual(8);
    await b.close();
    const closed = await state('idle');
    expect(closed.leases).toEqual({});
    expect(closed.actualCalls).toBe(11);
  });

  it('a call given back before the workflow is told of it is not counted, and is taken again up to the ceiling', async () => {
    await declare('given-back', { max_calls: 3 });
    const [a] = await twoProcesses();
    const first = await a.reserveCall(p.project.id, 'given-back');
    expect(first).toMatchObject({ granted: true });
    // Governance failed before its permit: the call goes back to its lease.
    expect(a.giveBack(p.project.id, 'given-back', first.lease!)).toBe(true);
    expect(granted(await sequential(a, 'given-back', 4))).toBe(3);
    // A lease it is not taken from gives nothing back.
    expect(a.giveBack(p.project.id, 'given-back', 'lse_not-this-one')).toBe(false);
    await a.close();
    expect((await state('given-back')).actualCalls).toBe(3);
  });

  it('a call given back after the workflow was told of it is not counted: the ceiling is served exactly, and the run replays', async () => {
    await declare('told', { max_calls: 5 });
    const [a] = await twoProcesses();
    const first = await a.reserveCall(p.project.id, 'told');
    expect(first).toMatchObject({ granted: true });
    // The lease reports what it used within a second while in use.
    const told = await waitFor(() => state('told'), (s) => Object.values(s.leases ?? {}).some((l) => l.used === 1), 20_000, 50);
    expect(Object.values(told.leases ?? {}).map((l) => l.used)).toEqual([1]);
    expect(told.actualCalls).toBe(1);
    // Governance failed before its permit: the lease's next request reports it returned.
    expect(a.giveBack(p.project.id, 'told', first.lease!)).toBe(true);
    // Nothing more to give back on this lease.
    expect(a.giveBack(p.project.id, 'told', first.lease!)).toBe(false);
    const out = await sequential(a, 'told', 6);
    expect(granted(out)).toBe(5);
    expect(out[5]).toEqual({ granted: false, reason: 'ceiling_reached' });
    await a.close();
    const after = await state('told');
    expect(after.leases).toEqual({});
    expect(after.actualCalls).toBe(5);

    // The run, with its give-back report (and the patch marker it recorded), replays.
    const handle = tg.temporal.client.workflow.getHandle(`intent:${p.project.id}:told`);
    const history = await handle.fetchHistory();
    const patchIds = history.events!.filter((e) => e.markerRecordedEventAttributes).map((e) => Buffer.from(e.markerRecordedEventAttributes!.details!['patch-data'].payloads![0].data!).toString());
    expect(patchIds.some((id) => id.includes('intent-lease-returned-calls'))).toBe(true);
    const bundle = process.env.TEMPORAL_WORKFLOW_BUNDLE!;
    await expect(Worker.runReplayHistory({ workflowBundle: { codePath: bundle } }, history, `intent:${p.project.id}:told`)).resolves.toBeUndefined();
  });

  it('a call given back after its lease was returned is un-counted by a report of its own: the ceiling is served exactly', async () => {
    await declare('late', { max_calls: 3 });
    const [a] = await twoProcesses([0, 600_000]);
    const first = await a.reserveCall(p.project.id, 'late');
    expect(first).toMatchObject({ granted: true });
    // Idle at once: the lease goes back with its use.
    await waitFor(() => Promise.resolve(a.leases().length), (n) => n === 0, 20_000, 20);
    expect((await state('late')).actualCalls).toBe(1);
    // Governance failed before its permit, after the lease went back: the workflow stops counting it.
    expect(a.giveBack(p.project.id, 'late', first.lease!)).toBe(true);
    expect(a.giveBack(p.project.id, 'late', first.lease!)).toBe(false);
    expect((await waitFor(() => state('late'), (s) => s.actualCalls === 0, 20_000, 20)).actualCalls).toBe(0);
    expect(granted(await sequential(a, 'late', 4))).toBe(3);
    await a.close();
    expect((await state('late')).actualCalls).toBe(3);
  });

  it('a lease settled from permits counts its given-back calls as given back, and a late give-back on it is un-counted once; the run replays', async () => {
    await declare('settled', { max_calls: 10 });
    const handle = tg.temporal.client.workflow.getHandle(`intent:${p.project.id}:settled`);
    const lease = (leaseId: string, rest: { used: number; need?: number; want?: number; returned?: number; release?: boolean }) =>
      handle.executeUpdate(leaseCallsUpdate, { args: [{ leaseId, holder: 'silent', need: 0, want: 0, ...rest }] });
    const permits = async (leaseId: string, n: number) => {
      for (let i = 0; i < n; i++) {
        await tg.db.query(
          `INSERT INTO permits (id, project_id, route, workflow_id, decision, reason_code, display_reason, decision_details, metadata, issued_at)
           VALUES ($1, $2, 'executions', 'settled', 'allow', 'policy.active_policy_candidate', 'test', '{}'::jsonb, $3::jsonb, now())`,
          [`permit_${leaseId}_${p.project.id}_${i}`, p.project.id, JSON.stringify({ intent_lease: leaseId })],
        );
      }
    };
    // Two holders that go silent (no renewal, no return): the workflow settles both from permits.
    expect((await lease('lse_a', { used: 0, need: 3, want: 3 })).size).toBe(3);
    expect((await lease('lse_b', { used: 0, need: 3, want: 3 })).size).toBe(3);
    // a: three calls reported; two wrote their permits, the third's governance is still running.
    expect((await lease('lse_a', { used: 3 })).actualCalls).toBe(3);
    // b: two calls reported, one of them given back (no permit), then a third call with its permit, unreported.
    expect((await lease('lse_b', { used: 2 })).actualCalls).toBe(5);
    expect((await lease('lse_b', { used: 2, returned: 1 })).actualCalls).toBe(4);
    await permits('lse_a', 2);
    await permits('lse_b', 2);
    const settled = await waitFor(() => state('settled'), (s) => Object.keys(s.leases ?? {}).length === 0, 20_000, 50);
    // a counts what it reported (3), b its permits plus its given-back call, less that call (2).
    expect(settled.actualCalls).toBe(5);
    // a's third call fails before its permit, after the settlement: its holder reports it given back.
    expect(await lease('lse_a', { used: 3, returned: 1, release: true })).toMatchObject({ closed: true, actualCalls: 4 });
    // The same report again, and a stale one, change nothing.
    expect((await lease('lse_a', { used: 3, returned: 1, release: true })).actualCalls).toBe(4);
    expect((await lease('lse_b', { used: 2, returned: 1, release: true })).actualCalls).toBe(4);
    // Four permits were allowed: the count is theirs, and the room left is the rest.
    const { rows } = await tg.db.query(`SELECT count(*)::int AS n FROM permits WHERE project_id = $1 AND workflow_id = 'settled'`, [p.project.id]);
    expect(rows[0].n).toBe(4);
    const [c] = await twoProcesses();
    expect(granted(await sequential(c, 'settled', 7))).toBe(6);
    await c.close();
    expect((await state('settled')).actualCalls).toBe(10);

    const history = await handle.fetchHistory();
    const patchIds = history.events!.filter((e) => e.markerRecordedEventAttributes).map((e) => Buffer.from(e.markerRecordedEventAttributes!.details!['patch-data'].payloads![0].data!).toString());
    expect(patchIds.some((id) => id.includes('intent-lease-late-returns'))).toBe(true);
    const bundle = process.env.TEMPORAL_WORKFLOW_BUNDLE!;
    await expect(Worker.runReplayHistory({ workflowBundle: { codePath: bundle } }, history, `intent:${p.project.id}:settled`)).resolves.toBeUndefined();
  });
});
