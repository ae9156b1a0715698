import { startTestTollgate, createTestProject, http, TestProject } from '../../support/tollgate';
import { listEvents } from '../../../src/db/repositories/events';
import { verifyEventChain } from '../../../src/db/repositories/event-chain-verification';

describe('policies and policy templates', () => {
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof http>;

  beforeAll(async () => {
    tg = await startTestTollgate();
    call = http(tg.url!);
  });
  afterAll(async () => tg?.close());

  const issue = (p: TestProject, extra: Record<string, unknown> = {}) =>
    call('POST', '/v1/permits', {
      key: p.clientKey,
      body: { project_id: p.project.id, provider: 'openai', model: 'gpt-4o-mini', estimated_input_tokens: 1000, estimated_output_tokens: 1000, ...extra },
    });
  const policyEvents = async (p: TestProject) =>
    (await listEvents(tg.db, p.project.id, { limit: 1000 })).filter((e) => e.event_type.startsWith('policy.'));

  it('CRUD of a deny rule changes the next decision and is recorded on the event chain', async () => {
    const p = await createTestProject(tg.db);
    expect((await issue(p)).json.decision).toBe('allow');

    const created = await call('POST', '/v1/policies', {
      key: p.adminKey,
      body: { type: 'deny_rule', id: 'no-gpt-4o-mini', name: 'No mini', config: { match: { model: 'gpt-4o-mini' }, reason: 'Mini is retired here' } },
    });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      object: 'policy', id: 'no-gpt-4o-mini', type: 'deny_rule', name: 'No mini', managed_by: 'policies', document_version: 1,
      config: { match: { model: 'gpt-4o-mini' }, reason: 'Mini is retired here' },
    });
    const denied = (await issue(p)).json;
    expect(denied).toMatchObject({ decision: 'deny', reason_code: 'policy.rule_denied', display_reason: 'Mini is retired here' });
    expect(denied.decision_details.rule_id).toBe('no-gpt-4o-mini');

    // The rule is part of the project policy document.
    const doc = await call('GET', `/v1/projects/${p.project.id}/policy`, { key: p.adminKey });
    expect(doc.json.document.deny_rules).toEqual([{ id: 'no-gpt-4o-mini', match: { model: 'gpt-4o-mini' }, reason: 'Mini is retired here' }]);

    const patched = await call('PATCH', '/v1/policies/no-gpt-4o-mini', { key: p.adminKey, body: { config: { match: { model: 'gpt-4o' } } } });
    expect(patched.status).toBe(200);
    expect(patched.json).toMatchObject({ document_version: 2, name: 'No mini', config: { match: { model: 'gpt-4o' }, reason: 'Mini is retired here' } });
    expect((await issue(p)).json.decision).toBe('allow');
    expect((await issue(p, { model: 'gpt-4o' })).json.decision).toBe('deny');

    const list = await call('GET', '/v1/policies', { key: p.clientKey });
    expect(list.json).toMatchObject({ object: 'list', document_version: 2 });
    expect(list.json.data.map((x: any) => x.id)).toEqual(['no-gpt-4o-mini']);
    expect((await call('GET', '/v1/policies/no-gpt-4o-mini', { key: p.clientKey })).json.type).toBe('deny_rule');

    const deleted = await call('DELETE', '/v1/policies/no-gpt-4o-mini', { key: p.adminKey });
    expect(deleted.status).toBe(200);
    expect(deleted.json).toEqual({ object: 'policy', id: 'no-gpt-4o-mini', type: 'deny_rule', deleted: true, document_version: 3 });
    expect((await issue(p, { model: 'gpt-4o' })).json.decision).toBe('allow');
    expect((await call('GET', '/v1/policies/no-gpt-4o-mini', { key: p.clientKey })).status).toBe(404);
    expect((await call('DELETE', '/v1/policies/no-gpt-4o-mini', { key: p.adminKey })).status).toBe(404);

    const events = await policyEvents(p);
    expect(events.map((e) => e.event_type)).toEqual(['policy.updated', 'policy.updated', 'policy.updated', 'policy.deleted']);
    expect(events.map((e) => e.metadata.version)).toEqual([1, 2, 3, 3]);
    expect(events[3].metadata).toMatchObject({ policy_id: 'no-gpt-4o-mini', policy_type: 'deny_rule' });
    expect((await verifyEventChain(tg.db, p.project.id)).ok).toBe(true);
  });

  it('writes need an admin key; reads work with a client key', async () => {
    const p = await createTestProject(tg.db);
    const body = { type: 'deny_rule', config: { match: { operation: 'generate.image' } } };
    const refused = await call('POST', '/v1/policies', { key: p.clientKey, body });
    expect(refused.status).toBe(403);
    expect(refused.json.error.code).toBe('insufficient_scope');
    const created = await call('POST', '/v1/policies', { key: p.adminKey, body });
    expect(created.json.id).toMatch(/^pol_/);
    expect((await call('PATCH', `/v1/policies/${created.json.id}`, { key: p.clientKey, body: { name: 'x' } })).status).toBe(403);
    expect((await call('DELETE', `/v1/policies/${created.json.id}`, { key: p.clientKey })).status).toBe(403);
    expect((await call('GET', '/v1/policies', { key: p.clientKey })).json.data).toHaveLength(1);
    // Another project's policy is not visible.
    const other = await createTestProject(tg.db);
    expect((await call('GET', `/v1/policies/${created.json.id}`, { key: other.clientKey })).status).toBe(404);
  });

  it('validates configs; duplicate ids and a second singleton are 409', async () => {
    const p = await createTestProject(tg.db);
    const bad = await call('POST', '/v1/policies', { key: p.adminKey, body: { type: 'rate_limit', config: { metric: 'bytes', limit: 0 } } });
    expect(bad.status).toBe(400);
    expect(bad.json.error.details.issues.map((i: any) => i.path)).toEqual(expect.arrayContaining(['config.metric', 'config.limit']));
    expect((await call('POST', '/v1/policies', { key: p.adminKey, body: { config: {} } })).status).toBe(400);
    const a = await call('POST', '/v1/policies', { key: p.adminKey, body: { type: 'review_rule', id: 'r1', config: {} } });
    expect(a.status).toBe(201);
    const dup = await call('POST', '/v1/policies', { key: p.adminKey, body: { type: 'deny_rule', id: 'r1', config: {} } });
    expect(dup.status).toBe(409);
    expect(dup.json.error.code).toBe('policy_exists');
    expect((await call('POST', '/v1/policies', { key: p.adminKey, body: { type: 'budget', config: { daily_usd_micros: 10 } } })).status).toBe(201);
    const second = await call('POST', '/v1/policies', { key: p.adminKey, body: { type: 'budget', config: { daily_usd_micros: 20 } } });
    expect(second.status).toBe(409);
    const badThreshold = await call('PATCH', '/v1/policies/budget', { key: p.adminKey, body: { config: { monthly_threshold_ratio: 0.5 } } });
    expect(badThreshold.status).toBe(400);
  });

  it('lists rules written directly into the document via PATCH /v1/projects/{id}/policy', async () => {
    const p = await createTestProject(tg.db);
    await call('PATCH', `/v1/projects/${p.project.id}/policy`, {
      key: p.adminKey,
      body: { rate_limits: [{ id: 'rpm', metric: 'requests', limit: 5, window_seconds: 60 }], allowed_models: ['gpt-4o-mini'] },
    });
    const list = await call('GET', '/v1/policies', { key: p.clientKey });
    expect(list.json.data.map((x: any) => [x.id, x.type, x.managed_by])).toEqual([
      ['rpm', 'rate_limit', 'policy_document'],
      ['model_allow_list', 'model_allow_list', 'policy_document'],
    ]);
    // And a singleton can be removed through /v1/policies, restoring the default (every model allowed).
    expect((await issue(p, { model: 'gpt-4o' })).json.reason_code).toBe('policy.model_not_allowed');
    expect((await call('DELETE', '/v1/policies/model_allow_list', { key: p.adminKey })).status).toBe(200);
    expect((await issue(p, { model: 'gpt-4o' })).json.decision).toBe('allow');
  });

  describe('templates', () => {
    it('lists presets and reads one; unknown is 404', async () => {
      const p = await createTestProject(tg.db);
      const list = await call('GET', '/v1/policy-templates', { key: p.clientKey });
      expect(list.status).toBe(200);
      const ids = list.json.data.map((t: any) => t.id);
      expect(ids).toEqual(expect.arrayContaining(['cost-guard', 'model-allow-list', 'human-review-expensive-calls', 'pii-firewall-strict']));
      const one = await call('GET', '/v1/policy-templates/cost-guard', { key: p.clientKey });
      expect(one.json).toMatchObject({ object: 'policy_template', id: 'cost-guard', policy: { type: 'budget', config: { per_request_usd_micros: 2_000_000 } } });
      expect((await call('GET', '/v1/policy-templates/nope', { key: p.clientKey })).status).toBe(404);
      expect((await call('GET', '/v1/policy-templates')).status).toBe(401);
    });

    it('every template instantiates into a valid policy', async () => {
      const p = await createTestProject(tg.db);
      const list = await call('GET', '/v1/policy-templates', { key: p.clientKey });
      const seen = new Set<string>();
      for (const t of list.json.data) {
        // Singleton types (budget, firewall) take one template per project.
        const q = seen.has(t.policy.type) ? await createTestProject(tg.db) : p;
        seen.add(t.policy.type);
        const res = await call('POST', '/v1/policies', { key: q.adminKey, body: { template_id: t.id } });
        expect([t.id, res.status]).toEqual([t.id, 201]);
        expect(res.json).toMatchObject({ type: t.policy.type, template_id: t.id });
      }
    });

    it('human review template with an override makes the next expensive call a review', async () => {
      const p = await createTestProject(tg.db);
      const res = await call('POST', '/v1/policies', {
        key: p.adminKey,
        body: { template_id: 'human-review-expensive-calls', name: 'Review > $0.0005', config: { min_estimated_cost_usd_micros: 500 } },
      });
      expect(res.status).toBe(201);
      expect(res.json.config).toMatchObject({ min_estimated_cost_usd_micros: 500, match: {} });
      expect((await issue(p)).json).toMatchObject({ decision: 'review', reason_code: 'policy.review_required' });
      expect((await issue(p, { estimated_output_tokens: 10 })).json.decision).toBe('allow');
    });
  });
});
