/**
 * Inputs that once stopped a call's record or the gateway (issue 13): NUL and lone surrogates in
 * prompts, invalid output-token ceilings, and huge runs without word breaks.
 */
import { startHarness, Harness, say, eventTypes, patchPolicy } from './helpers';
import type { TestProject } from '../../support/tollgate';

describe('hostile inputs on the governed-call routes', () => {
  let h: Harness;
  let p: TestProject;
  beforeAll(async () => {
    h = await startHarness();
    p = await h.project();
  });
  afterAll(async () => h?.close());

  const proxy = (body: unknown) => h.call('POST', '/v1/proxy/openai/v1/chat/completions', { key: p.clientKey, body });

  it('a NUL in the prompt: answered, recorded and on the timeline (executions)', async () => {
    const res = await h.call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('hi \u0000 there') } });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe('completed');
    const back = await h.call('GET', `/v1/executions/${res.json.id}`, { key: p.clientKey });
    expect(back.status).toBe(200);
    // The stored envelope carries U+FFFD where the NUL was (PostgreSQL stores no NUL).
    expect(JSON.stringify(back.json.output)).not.toContain('\\u0000');
    expect(await eventTypes(h.tg, p.project.id, res.json.id)).toEqual(expect.arrayContaining(['permit.allowed', 'usage.recorded', 'request.completed']));
    const { rows } = await h.tg.db.query("SELECT reservation_state FROM permits WHERE request_id = $1", [res.json.id]);
    expect(rows[0].reservation_state).toBe('settled');
  });

  it('a NUL and a lone surrogate through the openai proxy: answered and recorded', async () => {
    for (const content of ['hi \u0000 there', 'broken \ud800 pair']) {
      const res = await proxy({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });
      expect(res.status).toBe(200);
      const id = res.headers.get('x-svc-request-id')!;
      const { rows } = await h.tg.db.query('SELECT status FROM calls WHERE id = $1', [id]);
      expect(rows[0]?.status).toBe('completed');
    }
  });

  it.each([2147483648, 1e21, 0.5, -5, 0, 1e308, -1e308, '64'])('max_tokens %p: 400 on the proxy (native shape) and on /v1/execute, nothing dispatched', async (bad) => {
    const before = h.emu.requestCount();
    const res = await proxy({ model: 'gpt-4o-mini', max_tokens: bad, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: 'invalid_max_tokens', message: expect.stringContaining('max_tokens') });
    const ex = await h.call('POST', '/v1/execute', { key: p.clientKey, body: { model: 'gpt-4o-mini', input: { messages: [{ role: 'user', content: 'hi' }], max_tokens: bad } } });
    expect(ex.status).toBe(400);
    expect(ex.json.error.code).toBe('validation_error');
    expect(JSON.stringify(ex.json.error.details)).toContain('max_tokens');
    expect(h.emu.requestCount()).toBe(before);
  });

  it('a 2 MB run without word breaks is estimated by its size (not counted) and governed', async () => {
    // Denied by a per-request cap after the estimate and the firewall. Counting the tokens of a run
    // is quadratic (seconds at 10,000 characters; this is 2,000,000): the estimate must not count it.
    const capped = await h.project();
    await patchPolicy(h, capped, { budgets: { per_request_usd_micros: 1_000 } });
    const res = await h.call('POST', '/v1/proxy/openai/v1/chat/completions', { key: capped.clientKey, body: { model: 'gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'a'.repeat(2_000_000) }] } });
    expect(res.status).toBe(403);
    expect(res.json.error.code).toBe('budget.request_cap_exceeded');
    const { rows } = await h.tg.db.query('SELECT estimated_input_tokens FROM permits WHERE request_id = $1', [res.headers.get('x-svc-request-id')]);
    // Bounded by the UTF-8 size (an upper bound), not counted: 2,000,000 + message overhead.
    expect(Number(rows[0].estimated_input_tokens)).toBeGreaterThanOrEqual(2_000_000);
  });

  it.each([200, 10_000, 100_000])('%p levels of nesting: 400 invalid_json on executions, execute and the proxy (never a 500)', async (levels) => {
    const nested = '['.repeat(levels) + ']'.repeat(levels);
    const raw = (path: string, body: string) => h.call('POST', path, { key: p.clientKey, rawBody: body, headers: { 'content-type': 'application/json' } });
    const ex = await raw('/v1/executions', `{"operation":"generate.text","messages":[{"role":"user","content":"hi"}],"provider_options":{"openai":{"x":${nested}}}}`);
    expect(ex.status).toBe(400);
    expect(ex.json.error.code).toBe('invalid_json');
    const exe = await raw('/v1/execute', `{"model":"gpt-4o-mini","input":{"messages":[{"role":"user","content":"hi"}],"metadata":${nested}}}`);
    expect(exe.status).toBe(400);
    const px = await raw('/v1/proxy/openai/v1/chat/completions', `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"x":${nested}}`);
    expect(px.status).toBe(400);
    expect(px.json.error.code).toBe('invalid_json');
  });

  it('a 5 MB prompt on /v1/executions is governed and answered (no Temporal payload on the request path)', async () => {
    const res = await h.call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('word '.repeat(1_000_000)), parameters: { max_output_tokens: 16 } } });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe('completed');
  });
});
