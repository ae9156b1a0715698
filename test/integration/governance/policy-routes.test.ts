import { startTestTollgate, createTestProject, http, TestProject } from '../../support/tollgate';
import { createGovernance } from '../../../src/governance';
import { systemClock } from '../../../src/clock';
import { listEvents } from '../../../src/db/repositories/events';
import { verifyEventChain } from '../../../src/db/repositories/event-chain-verification';
import { request } from '../../unit/governance/helpers';

describe('policy routes: GET/PATCH /v1/projects/:project_id/policy', () => {
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof http>;
  let p: TestProject;
  const path = () => `/v1/projects/${p.project.id}/policy`;

  beforeAll(async () => {
    tg = await startTestTollgate({ role: 'api' });
    call = http(tg.url!);
  });
  beforeEach(async () => {
    p = await createTestProject(tg.db);
  });
  afterAll(async () => tg?.close());

  it('requires an admin key; another project is a 404', async () => {
    expect((await call('GET', path())).status).toBe(401);
    const client = await call('GET', path(), { key: p.clientKey });
    expect(client.status).toBe(403);
    expect(client.json.error.code).toBe('insufficient_scope');
    expect((await call('PATCH', path(), { key: p.clientKey, body: {} })).status).toBe(403);
    const other = await createTestProject(tg.db);
    expect((await call('GET', `/v1/projects/${other.project.id}/policy`, { key: p.adminKey })).status).toBe(404);
  });

  it('GET returns the defaults at version 0 (firewall in block mode); detector rules are never exposed', async () => {
    const res = await call('GET', path(), { key: p.adminKey });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ object: 'project_policy', project_id: p.project.id, version: 0 });
    expect(res.json.document.firewall).toEqual({
      mode: 'block',
      detect_pii_email: false,
      detect_pii_phone: false,
      actions: { prompt_injection: 'block', secret: 'block', pii: 'redact' },
    });
    expect(res.json.document.budgets.monthly_usd_micros).toBeNull();
    expect(res.text).not.toMatch(/AKIA|BEGIN|ignore/);
  });

  it('PATCH merges, validates, increments the version and appends policy.updated', async () => {
    const a = await call('PATCH', path(), { key: p.adminKey, body: { budgets: { daily_usd_micros: 5_000_000 }, firewall: { mode: 'monitor' } } });
    expect(a.status).toBe(200);
    expect(a.json.version).toBe(1);
    expect(a.json.document.budgets.daily_usd_micros).toBe(5_000_000);
    const b = await call('PATCH', path(), { key: p.adminKey, body: { budgets: { monthly_usd_micros: 90_000_000 } } });
    expect(b.json.version).toBe(2);
    expect(b.json.document.budgets).toMatchObject({ daily_usd_micros: 5_000_000, monthly_usd_micros: 90_000_000 });
    expect(b.json.document.firewall.mode).toBe('monitor');
    // null removes a member (RFC 7396) → back to the default.
    const c = await call('PATCH', path(), { key: p.adminKey, body: { budgets: { daily_usd_micros: null } } });
    expect(c.json).toMatchObject({ version: 3, document: { budgets: { daily_usd_micros: null, monthly_usd_micros: 90_000_000 } } });
    expect((await call('GET', path(), { key: p.adminKey })).json.version).toBe(3);
    const events = await listEvents(tg.db, p.project.id, { eventType: 'policy.updated' });
    expect(events.map((e) => e.metadata.version)).toEqual([1, 2, 3]);
    expect(events[0]).toMatchObject({ source: 'policies', phase: 'policy' });
    expect((await verifyEventChain(tg.db, p.project.id)).ok).toBe(true);
  });

  it('400 validation_error naming every bad field; nothing stored', async () => {
    const res = await call('PATCH', path(), {
      key: p.adminKey,
      body: {
        budgets: { daily_usd_micros: -1, monthly_threshold_ratio: 0.8 },
        firewall: { mode: 'loud' },
        rate_limits: [{ id: 'r', metric: 'requests', limit: 0, window_seconds: 60 }],
        bogus: true,
      },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('validation_error');
    const paths = res.json.error.details.issues.map((i: any) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['budgets.daily_usd_micros', 'firewall.mode', 'rate_limits.0.limit', '']));
    expect((await call('PATCH', path(), { key: p.adminKey, body: [1] })).status).toBe(400);
    expect((await call('GET', path(), { key: p.adminKey })).json.version).toBe(0);
  });

  it('firewall actions per category: stored when valid; redact for prompt_injection is a 400 naming the field', async () => {
    const q = await createTestProject(tg.db);
    const qpath = () => `/v1/projects/${q.project.id}/policy`;
    const bad = await call('PATCH', qpath(), { key: q.adminKey, body: { firewall: { actions: { prompt_injection: 'redact' } } } });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('validation_error');
    expect(bad.json.error.details.issues).toEqual([expect.objectContaining({ path: 'firewall.actions.prompt_injection', message: expect.stringContaining('no span to mask') })]);
    const unknown = await call('PATCH', qpath(), { key: q.adminKey, body: { firewall: { actions: { pii: 'mask', jailbreak: 'block' } } } });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.details.issues.map((i: any) => i.path)).toEqual(expect.arrayContaining(['firewall.actions.pii', 'firewall.actions']));
    const ok = await call('PATCH', qpath(), { key: q.adminKey, body: { firewall: { actions: { secret: 'redact', pii: 'flag' } } } });
    expect(ok.status).toBe(200);
    expect(ok.json.document.firewall.actions).toEqual({ prompt_injection: 'block', secret: 'redact', pii: 'flag' });
  });

  it('a policy change alters the next decision', async () => {
    const gov = createGovernance({ db: tg.db, clock: systemClock });
    const req = () => request(p.project.id, { model: 'gpt-4o-mini' });
    expect((await gov.evaluate(req(), { persist: false })).decision).toBe('allow');
    await call('PATCH', path(), { key: p.adminKey, body: { allowed_models: ['anthropic/*'] } });
    const d = await gov.evaluate(req(), { persist: false });
    expect(d.reason_code).toBe('policy.model_not_allowed');
    expect(d.metadata.policy_version).toBe(1);
    await call('PATCH', path(), { key: p.adminKey, body: { allowed_models: null, budgets: { per_request_usd_micros: 10 } } });
    expect((await gov.evaluate(req(), { persist: false })).reason_code).toBe('budget.request_cap_exceeded');
  });
});
