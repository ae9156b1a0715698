import { countEvents, startHarness, Harness } from './helpers';

/** X-Svc-Workflow-Id: executions reserve calls against a declared intent's ceiling. */
describe('executions attributed to an intent', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h?.close());

  const body = { operation: 'generate.text', messages: [{ role: 'user', content: 'Summarise the plan.' }] };

  it('allows calls up to max_calls, denies past the ceiling and after completion, and reconciles from permits', async () => {
    const p = await h.project();
    const declared = await h.call('POST', '/v1/workflows', {
      key: p.clientKey,
      body: { workflow_id: 'agent-run-1', intent: { expected_calls: 1, max_calls: 2 } },
    });
    expect(declared.status).toBe(201);
    expect(declared.json).toMatchObject({ decision: 'accepted', status: 'active', actual_calls: 0 });

    const results = [];
    for (let i = 0; i < 3; i++) {
      results.push(await h.call('POST', '/v1/executions', { key: p.clientKey, body, headers: { 'x-svc-workflow-id': 'agent-run-1' } }));
    }
    expect(results.map((r) => r.status)).toEqual([200, 200, 403]);
    expect(results[2].json).toMatchObject({ status: 'denied', output: null, usage: { input_tokens: 0, output_tokens: 0, metrics: [] } });
    expect(JSON.stringify(results[2].json)).toContain('workflow_intent.max_calls_exceeded');
    expect(results[2].headers.get('x-svc-permit-id')).toMatch(/^permit_/);

    const permits = await h.tg.db.query(
      `SELECT decision FROM permits WHERE project_id = $1 AND workflow_id = 'agent-run-1' ORDER BY issued_at`,
      [p.project.id],
    );
    expect(permits.rows.map((r) => r.decision)).toEqual(['allow', 'allow', 'deny']);

    const read = await h.call('GET', '/v1/workflows/agent-run-1', { key: p.clientKey });
    expect(read.json).toMatchObject({ actual_calls: 2, drift: { expected_calls_exceeded: true, max_calls_exceeded: true } });

    const completed = await h.call('POST', '/v1/workflows/agent-run-1/complete', { key: p.clientKey, body: {} });
    expect(completed.status).toBe(200);
    expect(completed.json.reconciliation).toEqual({ authoritative_actual_calls: 2, cached_actual_calls: 2, counter_divergence_detected: false });

    const after = await h.call('POST', '/v1/executions', { key: p.clientKey, body, headers: { 'x-svc-workflow-id': 'agent-run-1' } });
    expect(after.status).toBe(403);
    expect(JSON.stringify(after.json)).toContain('workflow_intent.not_active');
  });

  it('never dispatches more than max_calls under concurrency', async () => {
    const p = await h.project();
    await h.call('POST', '/v1/workflows', { key: p.clientKey, body: { workflow_id: 'burst', intent: { max_calls: 5 } } });
    const results = await Promise.all(
      Array.from({ length: 20 }, () => h.call('POST', '/v1/executions', { key: p.clientKey, body, headers: { 'x-svc-workflow-id': 'burst' } })),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    expect(results.filter((r) => r.status === 403)).toHaveLength(15);
    expect(await countEvents(h.tg, p.project.id, 'provider.request_sent')).toBe(5);
  });
});
