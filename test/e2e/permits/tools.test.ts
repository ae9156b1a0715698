/**
 * POST /v1/permits with `tools`: the names of the tools the caller will offer the model. A policy
 * rule's `match.tool` fires on them as on a proxied request that sends them, the permit and its
 * decision event keep them, a dry run shows them, and they are part of the idempotent payload.
 */
import { MAX_PERMIT_TOOLS } from '../../../src/permits/schemas';
import { permitsSuite } from './helpers';

describe('permit-first API: the tools a call will offer', () => {
  const { call, project, permitBody, setPolicy, issue } = permitsSuite();

  const decisionEvent = async (key: string, requestId: string, type: string) => {
    const res = await call('GET', `/v1/requests/${requestId}/timeline`, { key });
    expect(res.status).toBe(200);
    const found = res.json.events.filter((e: { event_type: string }) => e.event_type === type);
    expect(found).toHaveLength(1);
    return found[0].metadata;
  };

  it('a match.tool deny rule fires on a permit naming the tool; other tools or none pass; the permit keeps the names', async () => {
    const p = await project();
    await setPolicy(p, { deny_rules: [{ id: 'no-shell', match: { tool: ['run_*', 'code_interpreter'] }, reason: 'No code execution from this project' }] });

    const denied = await issue(p, { tools: ['search_docs', 'run_shell'] });
    expect(denied.status).toBe(200);
    expect(denied.json).toMatchObject({ decision: 'deny', reason_code: 'policy.rule_denied', display_reason: 'No code execution from this project', tools: ['search_docs', 'run_shell'] });
    expect(denied.json.decision_details.rule_id).toBe('no-shell');
    expect(await decisionEvent(p.clientKey, denied.json.request_id, 'permit.denied')).toMatchObject({ tools: ['search_docs', 'run_shell'] });
    expect((await call('GET', `/v1/permits/${denied.json.permit_id}`, { key: p.clientKey })).json.tools).toEqual(['search_docs', 'run_shell']);

    const builtIn = await issue(p, { tools: ['code_interpreter'] });
    expect(builtIn.json).toMatchObject({ decision: 'deny', tools: ['code_interpreter'] });

    const other = await issue(p, { tools: ['search_docs'] });
    expect(other.json).toMatchObject({ decision: 'allow', tools: ['search_docs'] });
    expect(await decisionEvent(p.clientKey, other.json.request_id, 'permit.allowed')).toMatchObject({ tools: ['search_docs'] });

    const none = await issue(p);
    expect(none.json).toMatchObject({ decision: 'allow', tools: [] });
  });

  it('a match.tool review rule makes the permit a review; a dry run shows the tools and the decision, and stores nothing', async () => {
    const p = await project();
    await setPolicy(p, { review_rules: [{ id: 'payments-review', match: { tool: 'refund_payment' }, reason: 'Refunds need a human' }] });
    const dry = await call('POST', '/v1/permits/dry-run', { key: p.clientKey, body: permitBody(p, { tools: ['refund_payment'] }) });
    expect(dry.status).toBe(200);
    expect(dry.json).toMatchObject({ object: 'permit_dry_run', permit_id: null, decision: 'review', tools: ['refund_payment'] });
    expect((await call('GET', '/v1/permits', { key: p.clientKey })).json.data).toHaveLength(0);

    const review = await issue(p, { tools: ['refund_payment'] });
    expect(review.json).toMatchObject({ decision: 'review', tools: ['refund_payment'] });
    expect((await call('POST', '/v1/permits/dry-run', { key: p.clientKey, body: permitBody(p) })).json).toMatchObject({ decision: 'allow', tools: [] });
  });

  it('validates the names: their characters and length, each once, at most the limit (400 validation_error naming the item)', async () => {
    const p = await project();
    const bad = async (tools: unknown) => {
      const res = await issue(p, { tools });
      expect(res.status).toBe(400);
      expect(res.json.error.code).toBe('validation_error');
      return res.json.error.details.issues as { path: string; message: string }[];
    };
    expect(await bad(['ok', 'has space'])).toEqual([expect.objectContaining({ path: 'tools.1', message: expect.stringContaining('[A-Za-z0-9_.:-]') })]);
    expect(await bad([''])).toEqual([expect.objectContaining({ path: 'tools.0' })]);
    expect(await bad(['x'.repeat(129)])).toEqual([expect.objectContaining({ path: 'tools.0' })]);
    expect(await bad(['lookup', 'send', 'lookup'])).toEqual([{ path: 'tools.2', message: '"lookup" is named twice', code: 'custom' }]);
    const many = Array.from({ length: MAX_PERMIT_TOOLS + 1 }, (_, i) => `tool_${i}`);
    expect(await bad(many)).toEqual([expect.objectContaining({ path: 'tools', message: `at most ${MAX_PERMIT_TOOLS} tools` })]);
    expect(await bad('lookup')).toEqual([expect.objectContaining({ path: 'tools' })]);
    expect(await bad([{ name: 'lookup' }])).toEqual([expect.objectContaining({ path: 'tools.0' })]);
    // The limit itself is accepted.
    expect((await issue(p, { tools: many.slice(0, MAX_PERMIT_TOOLS) })).json.tools).toHaveLength(MAX_PERMIT_TOOLS);
  });

  it('the tools are part of the idempotent payload: other tools under the same key are a 409; none and [] are the same payload', async () => {
    const p = await project();
    const first = await issue(p, { idempotency_key: 'tools-key', tools: ['search_docs'] });
    expect(first.json.decision).toBe('allow');
    const replay = await issue(p, { idempotency_key: 'tools-key', tools: ['search_docs'] });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.json.permit_id).toBe(first.json.permit_id);
    const other = await issue(p, { idempotency_key: 'tools-key', tools: ['search_docs', 'send_email'] });
    expect(other.status).toBe(409);
    expect(other.json.error.code).toBe('idempotency_conflict');

    const bare = await issue(p, { idempotency_key: 'no-tools' });
    const empty = await issue(p, { idempotency_key: 'no-tools', tools: [] });
    expect(empty.status).toBe(200);
    expect(empty.json.permit_id).toBe(bare.json.permit_id);
  });
});
