import { startTestTollgate, createTestProject, http, TestProject } from '../../support/tollgate';
import { canonicalDeclaration } from '../../../src/intents/canonical';
import { verifySignatureB64 } from '../../../src/intents/signing';
import { TestTollgate } from './helpers';

describe('POST /v1/workflows (declaration)', () => {
  let tg: TestTollgate;
  let call: ReturnType<typeof http>;
  let p: TestProject;

  beforeAll(async () => {
    tg = await startTestTollgate();
    call = http(tg.url!);
  });
  beforeEach(async () => {
    p = await createTestProject(tg.db);
  });
  afterAll(async () => tg?.close());

  const declare = (body: unknown, key = p.clientKey, headers: Record<string, string> = {}) => call('POST', '/v1/workflows', { key, body, headers });

  it('accepts a declaration: projection, signature, workflow started with search attributes', async () => {
    const res = await declare(
      { workflow_id: 'agent-run_1', intent: { expected_calls: 100, max_calls: 120, expected_model: 'gpt-4o-mini', expected_input_tokens_per_call: 1000, expected_output_tokens_per_call: 500 }, budget_envelope_id: 'env_1' },
      p.clientKey,
      { 'x-svc-sdk': 'tollgate-python', 'x-svc-sdk-version': '1.2.3' },
    );
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({
      workflow_id: 'agent-run_1',
      decision: 'accepted',
      status: 'active',
      version: 1,
      actual_calls: 0,
      projected_cost: {
        amount_micros: 45000, // 100 × (1000 × $0.15/M + 500 × $0.60/M)
        currency: 'USD',
        methodology: {
          basis: 'expected_calls × per-call estimate',
          provenance: 'caller_declared_workflow',
          expected_calls: 100,
          input_tokens_per_call_estimated: 1000,
          output_tokens_per_call_estimated: 500,
          pricing_table_id: expect.any(String),
          tokenizer: 'o200k_base',
          quality: 'caller_estimate',
        },
      },
      declared_by: { type: 'api_key', id: expect.stringMatching(/^key_/) },
      declared_via: { sdk: 'tollgate-python', sdk_version: '1.2.3' },
      declaration_signature_b64: expect.any(String),
      canonical_intent_hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      budget_envelope_id: 'env_1',
      expires_at: null,
    });
    expect(new Date(res.json.declared_at).toISOString()).toBe(res.json.declared_at);

    // The signature verifies with the published key over the canonical declaration.
    const keys = await call('GET', '/v1/integrity/permit-binding-public-keys');
    expect(keys.status).toBe(200);
    expect(keys.text).not.toMatch(/PRIVATE/);
    const key = keys.json.data[0];
    expect(key).toMatchObject({ algorithm: 'Ed25519', kid: expect.stringMatching(/^ed25519_/) });
    const message = canonicalDeclaration({
      project_id: p.project.id,
      workflow_id: 'agent-run_1',
      canonical_intent_hash: res.json.canonical_intent_hash,
      version: 1,
      declared_at: res.json.declared_at,
      declared_by: res.json.declared_by,
    });
    expect(verifySignatureB64(key.public_key_b64, message, res.json.declaration_signature_b64)).toBe(true);

    // One intentWorkflow, findable by its search attributes, with a summary.
    const handle = tg.temporal.client.workflow.getHandle(`intent:${p.project.id}:agent-run_1`);
    const desc = await handle.describe();
    expect(desc.status.name).toBe('RUNNING');
    expect(desc.typedSearchAttributes.get({ name: 'TollgateWorkflowIntentId', type: 'KEYWORD' } as never)).toBe('agent-run_1');
    expect(desc.typedSearchAttributes.get({ name: 'TollgateProjectId', type: 'KEYWORD' } as never)).toBe(p.project.id);
    expect(desc.typedSearchAttributes.get({ name: 'TollgateStatus', type: 'KEYWORD' } as never)).toBe('active');
    expect(await desc.staticSummary()).toContain('agent-run_1');
  });

  it('uses defaults when only max_calls is given and sets expires_at from max_duration_seconds', async () => {
    const res = await declare({ workflow_id: 'defaults', intent: { max_calls: 10, max_duration_seconds: 3600 } });
    expect(res.status).toBe(201);
    expect(res.json.projected_cost.methodology).toMatchObject({ basis: 'max_calls × per-call estimate', expected_calls: 10, quality: 'default_assumption' });
    expect(Date.parse(res.json.expires_at) - Date.parse(res.json.declared_at)).toBe(3600_000);
    expect(res.json).toMatchObject({ expected_calls: null, max_calls: 10 });
  });

  it('rejects a declaration whose projected cost exceeds the monthly cap, and stores it as rejected', async () => {
    const cap = await call('PATCH', `/v1/projects/${p.project.id}/policy`, { key: p.adminKey, body: { budgets: { monthly_usd_micros: 40000 } } });
    expect(cap.status).toBe(200);
    const body = { workflow_id: 'too-big', intent: { expected_calls: 100, expected_model: 'gpt-4o-mini', expected_input_tokens_per_call: 1000, expected_output_tokens_per_call: 500 } };
    const res = await declare(body);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      workflow_id: 'too-big',
      decision: 'rejected',
      reason_code: 'workflow_intent.declaration_exceeds_budget_cap',
      projected_cost: { amount_micros: 45000, currency: 'USD', methodology: { basis: expect.any(String), provenance: 'caller_declared_workflow' } },
      decision_details: { current_monthly_spend_usd_micros: 0, monthly_cap_usd_micros: 40000, projected_workflow_cost_usd_micros: 45000 },
    });
    expect(res.json.status).toBeUndefined();
    const stored = await call('GET', '/v1/workflows/too-big', { key: p.clientKey });
    expect(stored.json).toMatchObject({ status: 'rejected', reason_code: 'workflow_intent.declaration_exceeds_budget_cap' });
    const listed = await call('GET', '/v1/workflows?status=rejected', { key: p.clientKey });
    expect(listed.json.data.map((w: any) => w.workflow_id)).toEqual(['too-big']);
    // Replaying the same declaration returns the same decision; no workflow was started.
    expect((await declare(body)).json).toEqual(res.json);
    await expect(tg.temporal.client.workflow.getHandle(`intent:${p.project.id}:too-big`).describe()).rejects.toThrow();
    // A smaller declaration fits under the cap.
    expect((await declare({ workflow_id: 'fits', intent: { expected_calls: 10 } })).json.decision).toBe('accepted');
  });

  it('replays the same canonical intent (any key order) and 409s a different one', async () => {
    const first = await declare({ workflow_id: 'idem', intent: { expected_calls: 5, max_calls: 9 } });
    expect(first.status).toBe(201);
    const replay = await declare({ intent: { max_calls: 9, expected_calls: 5 }, workflow_id: 'idem' });
    expect(replay.status).toBe(200);
    expect(replay.json).toEqual(first.json);
    const conflict = await declare({ workflow_id: 'idem', intent: { expected_calls: 6, max_calls: 9 } });
    expect(conflict.status).toBe(409);
    expect(conflict.json.error).toMatchObject({ code: 'workflow_intent.idempotency_conflict', details: { workflow_id: 'idem' } });
    // Another project may use the same workflow_id.
    const other = await createTestProject(tg.db);
    expect((await declare({ workflow_id: 'idem', intent: { expected_calls: 6 } }, other.clientKey)).status).toBe(201);
  });

  it('concurrent duplicate declarations: one declaration, one workflow, the rest replay or conflict', async () => {
    const same = await Promise.all(Array.from({ length: 10 }, () => declare({ workflow_id: 'race', intent: { max_calls: 3 } })));
    expect(same.filter((r) => r.status === 201)).toHaveLength(1);
    expect(same.filter((r) => r.status === 200)).toHaveLength(9);
    expect(new Set(same.map((r) => r.json.declaration_signature_b64)).size).toBe(1);

    const mixed = await Promise.all(Array.from({ length: 10 }, (_, i) => declare({ workflow_id: 'race2', intent: { max_calls: i + 1 } })));
    expect(mixed.filter((r) => r.status === 201)).toHaveLength(1);
    expect(mixed.filter((r) => r.status === 409)).toHaveLength(9);
    mixed.filter((r) => r.status === 409).forEach((r) => expect(r.json.error.code).toBe('workflow_intent.idempotency_conflict'));
    const { rows } = await tg.db.query('SELECT count(*)::int AS n FROM intents WHERE project_id = $1', [p.project.id]);
    expect(rows[0].n).toBe(2);
  });

  it('validates the body: workflow_id pattern, one of the call counts, unknown fields, unknown model', async () => {
    const bad = async (body: unknown, path: string) => {
      const res = await declare(body);
      expect(res.status).toBe(400);
      expect(res.json.error.code).toBe('validation_error');
      expect(res.json.error.details.issues.map((i: any) => i.path)).toContain(path);
    };
    await bad({ workflow_id: 'has space', intent: { max_calls: 1 } }, 'workflow_id');
    await bad({ workflow_id: 'x'.repeat(256), intent: { max_calls: 1 } }, 'workflow_id');
    await bad({ workflow_id: '', intent: { max_calls: 1 } }, 'workflow_id');
    await bad({ workflow_id: 'ok', intent: {} }, 'intent');
    await bad({ workflow_id: 'ok', intent: { max_calls: 0 } }, 'intent.max_calls');
    await bad({ workflow_id: 'ok', intent: { max_calls: 1.5 } }, 'intent.max_calls');
    await bad({ workflow_id: 'ok', intent: { max_calls: 1, surprise: true } }, 'intent');
    await bad({ workflow_id: 'ok', intent: { max_calls: 1, expected_model: 'no-such-model-xyz' } }, 'intent.expected_model');
    expect((await declare({ workflow_id: 'x'.repeat(255), intent: { max_calls: 1 } })).status).toBe(201);
  });

  it('Starter plan: 403 plan.upgrade_required on every workflow route', async () => {
    const starter = await createTestProject(tg.db, 'starter');
    for (const [method, path] of [
      ['POST', '/v1/workflows'],
      ['GET', '/v1/workflows'],
      ['GET', '/v1/workflows/a'],
      ['POST', '/v1/workflows/a/amend'],
      ['POST', '/v1/workflows/a/complete'],
    ] as const) {
      const res = await call(method, path, { key: starter.clientKey, body: method === 'POST' ? { workflow_id: 'a', intent: { max_calls: 1 } } : undefined });
      expect(res.status).toBe(403);
      expect(res.json.error).toMatchObject({ code: 'plan.upgrade_required', details: { current_plan: 'starter' } });
    }
  });

  it('requires a key; another project cannot see the workflow', async () => {
    expect((await call('POST', '/v1/workflows', { body: { workflow_id: 'a', intent: { max_calls: 1 } } })).status).toBe(401);
    await declare({ workflow_id: 'mine', intent: { max_calls: 1 } });
    const other = await createTestProject(tg.db);
    expect((await call('GET', '/v1/workflows/mine', { key: other.clientKey })).status).toBe(404);
    expect((await call('GET', '/v1/workflows/mine', { key: p.clientKey })).status).toBe(200);
  });
});
