import { startTestTollgate, createTestProject, http, TestProject } from '../../support/tollgate';
import { canonicalAmendment } from '../../../src/intents/canonical';
import { verifySignatureB64 } from '../../../src/intents/signing';
import { IntentReservations } from '../../../src/intents/reservations';
import { insertPermits, TestTollgate, waitFor } from './helpers';

describe('intent lifecycle: amend, complete, expire, list', () => {
  let tg: TestTollgate;
  let call: ReturnType<typeof http>;
  let p: TestProject;
  let reservations: IntentReservations;

  beforeAll(async () => {
    tg = await startTestTollgate();
    call = http(tg.url!);
    reservations = new IntentReservations({ client: tg.temporal.client, db: tg.db });
  });
  beforeEach(async () => {
    p = await createTestProject(tg.db);
  });
  afterAll(async () => tg?.close());

  const declare = (workflow_id: string, intent: Record<string, unknown>) => call('POST', '/v1/workflows', { key: p.clientKey, body: { workflow_id, intent } });
  const amend = (id: string, body: unknown) => call('POST', `/v1/workflows/${id}/amend`, { key: p.clientKey, body });
  const complete = (id: string, body: unknown = {}) => call('POST', `/v1/workflows/${id}/complete`, { key: p.clientKey, body });
  const get = (id: string) => call('GET', `/v1/workflows/${id}`, { key: p.clientKey });

  describe('amend', () => {
    it('bumps the version, appends a signed amendment and recomputes the projection', async () => {
      const d = await declare('am-1', { expected_calls: 10, max_calls: 20 });
      expect(d.status).toBe(201);
      const res = await amend('am-1', { if_match_version: 1, new_expected_calls: 20, new_max_calls: 40, reason_provided: 'bigger corpus' });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({
        workflow_id: 'am-1',
        status: 'active',
        version: 2,
        amendment: {
          id: expect.stringMatching(/^wam_/),
          applied_against_version: 1,
          previous_expected_calls: 10,
          new_expected_calls: 20,
          previous_max_calls: 20,
          new_max_calls: 40,
          reason_provided: 'bigger corpus',
          amendment_signature_b64: expect.any(String),
          created_at: expect.any(String),
        },
        projected_cost: { currency: 'USD', methodology: { provenance: 'caller_declared_workflow', expected_calls: 20 } },
      });
      expect(res.json.projected_cost.amount_micros).toBe(2 * d.json.projected_cost.amount_micros);
      const a = res.json.amendment;
      const key = (await call('GET', '/v1/integrity/permit-binding-public-keys')).json.data[0];
      const message = canonicalAmendment({
        project_id: p.project.id,
        workflow_id: 'am-1',
        amendment_id: a.id,
        applied_against_version: 1,
        previous_expected_calls: 10,
        new_expected_calls: 20,
        previous_max_calls: 20,
        new_max_calls: 40,
        reason_provided: 'bigger corpus',
        created_at: a.created_at,
      });
      expect(verifySignatureB64(key.public_key_b64, message, a.amendment_signature_b64)).toBe(true);

      // Only max changes in the second amendment.
      const second = await amend('am-1', { if_match_version: 2, new_max_calls: 50 });
      expect(second.json).toMatchObject({ version: 3, amendment: { applied_against_version: 2, new_expected_calls: 20, new_max_calls: 50, reason_provided: null } });

      const read = await get('am-1');
      expect(read.json).toMatchObject({ version: 3, expected_calls: 20, max_calls: 50, status: 'active' });
      expect(read.json.amendments.map((x: any) => x.applied_against_version)).toEqual([1, 2]);
      expect(read.json.amendments[0]).toMatchObject({ id: a.id, new_expected_calls: 20, new_max_calls: 40, reason_provided: 'bigger corpus', created_at: a.created_at });
      expect(read.json.declaration).toMatchObject({ declared_at: d.json.declared_at, declaration_signature_b64: d.json.declaration_signature_b64, canonical_intent_hash: d.json.canonical_intent_hash });
    });

    it('409 workflow_intent.amendment_version_conflict with current and if_match versions', async () => {
      await declare('am-2', { max_calls: 5 });
      expect((await amend('am-2', { if_match_version: 1, new_max_calls: 6 })).status).toBe(200);
      const stale = await amend('am-2', { if_match_version: 1, new_max_calls: 7 });
      expect(stale.status).toBe(409);
      expect(stale.json.error).toEqual({
        code: 'workflow_intent.amendment_version_conflict',
        message: expect.any(String),
        details: { current_version: 2, if_match_version: 1 },
      });
      expect((await get('am-2')).json).toMatchObject({ version: 2, max_calls: 6 });
    });

    it('concurrent amends against one version: exactly one wins', async () => {
      await declare('am-3', { max_calls: 5 });
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => amend('am-3', { if_match_version: 1, new_max_calls: 10 + i })));
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      expect(results.filter((r) => r.status === 409 && r.json.error.code === 'workflow_intent.amendment_version_conflict')).toHaveLength(7);
      expect((await get('am-3')).json.amendments).toHaveLength(1);
    });

    it('409 workflow_intent.not_active on a completed workflow; 404 on an unknown one; 400 without new values', async () => {
      await declare('am-4', { max_calls: 5 });
      expect((await amend('am-4', { if_match_version: 1 })).status).toBe(400);
      expect((await complete('am-4')).status).toBe(200);
      const res = await amend('am-4', { if_match_version: 1, new_max_calls: 6 });
      expect(res.status).toBe(409);
      expect(res.json.error).toMatchObject({ code: 'workflow_intent.not_active', details: { status: 'completed' } });
      const again = await complete('am-4');
      expect(again.status).toBe(409);
      expect(again.json.error.code).toBe('workflow_intent.not_active');
      expect((await amend('nope', { if_match_version: 1, new_max_calls: 6 })).status).toBe(404);
    });
  });

  describe('complete', () => {
    it('reconciles against permit records with no divergence', async () => {
      await declare('c-1', { expected_calls: 3, max_calls: 10 });
      for (let i = 0; i < 4; i++) expect(await reservations.reserveCall(p.project.id, 'c-1')).toMatchObject({ granted: true });
      await insertPermits(tg.db, p.project.id, 'c-1', 4);
      await insertPermits(tg.db, p.project.id, 'c-1', 2, 'deny');
      const res = await complete('c-1', { reason_provided: 'done' });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({
        workflow_id: 'c-1',
        status: 'completed',
        version: 1,
        actual_calls: 4,
        expected_calls: 3,
        max_calls: 10,
        completed_at: expect.any(String),
        reconciliation: { authoritative_actual_calls: 4, cached_actual_calls: 4, counter_divergence_detected: false },
      });
      const read = await get('c-1');
      expect(read.json).toMatchObject({
        status: 'completed',
        actual_calls: 4,
        completed_at: res.json.completed_at,
        drift: { expected_calls_exceeded: true, max_calls_exceeded: false },
        reconciliation: res.json.reconciliation,
      });
      // The workflow closed; no more calls.
      const handle = tg.temporal.client.workflow.getHandle(`intent:${p.project.id}:c-1`);
      await waitFor(() => handle.describe(), (d) => d.status.name === 'COMPLETED');
      expect((await handle.describe()).typedSearchAttributes.get({ name: 'TollgateStatus', type: 'KEYWORD' } as never)).toBe('completed');
      expect(await reservations.reserveCall(p.project.id, 'c-1')).toEqual({ granted: false, reason: 'not_active' });
    });

    it('reports divergence when permit records and the counter disagree', async () => {
      await declare('c-2', { max_calls: 10 });
      for (let i = 0; i < 5; i++) await reservations.reserveCall(p.project.id, 'c-2');
      await insertPermits(tg.db, p.project.id, 'c-2', 3);
      const res = await complete('c-2');
      expect(res.json).toMatchObject({
        actual_calls: 3,
        reconciliation: { authoritative_actual_calls: 3, cached_actual_calls: 5, counter_divergence_detected: true },
      });
      expect((await get('c-2')).json).toMatchObject({ actual_calls: 3, reconciliation: { counter_divergence_detected: true } });
    });
  });

  it('expires after max_duration_seconds, persisted, and then refuses calls and amendments', async () => {
    const d = await declare('exp-1', { max_calls: 10, max_duration_seconds: 10 });
    expect(Date.parse(d.json.expires_at) - Date.parse(d.json.declared_at)).toBe(10_000);
    expect(await reservations.reserveCall(p.project.id, 'exp-1')).toMatchObject({ granted: true });
    const read = await waitFor(() => get('exp-1'), (r) => r.json.status === 'expired', 30_000);
    expect(read.json).toMatchObject({ status: 'expired', actual_calls: 1 });
    expect(Date.parse(read.json.expired_at)).toBeGreaterThanOrEqual(Date.parse(d.json.expires_at));
    expect(await reservations.reserveCall(p.project.id, 'exp-1')).toEqual({ granted: false, reason: 'not_active' });
    const res = await amend('exp-1', { if_match_version: 1, new_max_calls: 20 });
    expect(res.status).toBe(409);
    expect(res.json.error).toMatchObject({ code: 'workflow_intent.not_active', details: { status: 'expired' } });
    const desc = await tg.temporal.client.workflow.getHandle(`intent:${p.project.id}:exp-1`).describe();
    expect(desc.typedSearchAttributes.get({ name: 'TollgateStatus', type: 'KEYWORD' } as never)).toBe('expired');
  });

  it('reserveCall on an unknown intent is denied as unknown', async () => {
    expect(await reservations.reserveCall(p.project.id, 'never-declared')).toEqual({ granted: false, reason: 'unknown' });
  });

  describe('GET /v1/workflows', () => {
    it('filters by status and created_at bounds, and pages with an opaque cursor', async () => {
      const declared: { id: string; at: string }[] = [];
      for (let i = 0; i < 7; i++) {
        const r = await declare(`list-${i}`, { max_calls: 5 });
        declared.push({ id: `list-${i}`, at: r.json.declared_at });
        await new Promise((res) => setTimeout(res, 5));
      }
      await complete('list-1');
      await complete('list-4');

      // All, newest first, 3 per page.
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const q: string = `/v1/workflows?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const res = await call('GET', q, { key: p.clientKey });
        expect(res.status).toBe(200);
        expect(res.json.data.length).toBeLessThanOrEqual(3);
        seen.push(...res.json.data.map((w: any) => w.workflow_id));
        cursor = res.json.next_cursor;
        pages++;
      } while (cursor);
      expect(pages).toBe(3);
      expect(seen).toEqual(['list-6', 'list-5', 'list-4', 'list-3', 'list-2', 'list-1', 'list-0']);

      const page = await call('GET', '/v1/workflows?limit=2', { key: p.clientKey });
      expect(page.json.data[0]).toEqual({
        workflow_id: 'list-6',
        status: 'active',
        version: 1,
        actual_calls: 0,
        expected_calls: null,
        max_calls: 5,
        projected_cost_usd_micros: expect.any(Number),
        actual_cost_usd_micros: 0,
        declared_at: declared[6].at,
        expires_at: null,
      });

      const completed = await call('GET', '/v1/workflows?status=completed', { key: p.clientKey });
      expect(completed.json.data.map((w: any) => w.workflow_id)).toEqual(['list-4', 'list-1']);
      expect(completed.json.next_cursor).toBeNull();

      // Inclusive bounds.
      const window = await call('GET', `/v1/workflows?created_at_gte=${declared[2].at}&created_at_lte=${declared[4].at}`, { key: p.clientKey });
      expect(window.json.data.map((w: any) => w.workflow_id)).toEqual(['list-4', 'list-3', 'list-2']);
      const activeWindow = await call('GET', `/v1/workflows?status=active&created_at_gte=${declared[2].at}&limit=1`, { key: p.clientKey });
      expect(activeWindow.json.data.map((w: any) => w.workflow_id)).toEqual(['list-6']);
      const next = await call('GET', `/v1/workflows?status=active&created_at_gte=${declared[2].at}&limit=1&cursor=${activeWindow.json.next_cursor}`, { key: p.clientKey });
      expect(next.json.data.map((w: any) => w.workflow_id)).toEqual(['list-5']);
    });

    it('validates limit, status, bounds and cursor', async () => {
      for (const q of ['limit=0', 'limit=201', 'status=paused', 'created_at_gte=yesterday', 'cursor=garbage', 'surprise=1']) {
        const res = await call('GET', `/v1/workflows?${q}`, { key: p.clientKey });
        expect(res.status).toBe(400);
        expect(res.json.error.code).toBe('validation_error');
      }
      expect((await call('GET', '/v1/workflows?limit=200', { key: p.clientKey })).status).toBe(200);
    });
  });
});
