/**
 * Hard caps end to end: the emulator answers with the whole output ceiling (fill_output), so every
 * call costs its worst case; settled spend must still never pass the cap, on every route that
 * dispatches (executions sync and stream, execute, the five proxies sync and stream). The ceiling
 * Tollgate set or lowered reaches the provider's body and is reported (governance.actions, the
 * x-svc-governance-actions header).
 */
import { randomUUID } from 'node:crypto';
import { startHarness, Harness, patchPolicy, say } from './helpers';
import type { TestProject } from '../../support/tollgate';
import { waitUntil } from '../../support/wait';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.close());

const FILL = '[[emulator:fill_output=1,latency_ms=200]]';

function nativeAuth(provider: string, key: string): Record<string, string> {
  if (provider === 'anthropic') return { 'x-api-key': key };
  if (provider === 'google') return { 'x-goog-api-key': key };
  return { authorization: `Bearer ${key}` };
}

async function native(p: TestProject, path: string, body: unknown) {
  const provider = path.split('/')[1];
  const res = await fetch(`${h.tg.url}/v1/proxy${path}`, { method: 'POST', headers: { ...nativeAuth(provider, p.clientKey), 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function execution(p: TestProject, body: unknown, stream = false) {
  const res = await fetch(`${h.tg.url}/v1/executions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${p.clientKey}`, 'content-type': 'application/json', ...(stream ? { accept: 'text/event-stream' } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The governed calls of each route, each sending no ceiling or one far above what a 2,000 µ$ day allows. */
function callOf(p: TestProject, i: number): () => Promise<{ status: number }> {
  const text = `${FILL} call ${i} ${randomUUID()}`;
  const msgs = [{ role: 'user', content: text }];
  switch (i % 12) {
    case 0: return () => execution(p, { operation: 'generate.text', messages: say(text) });
    case 1: return () => execution(p, { operation: 'generate.text', mode: 'stream', messages: say(text), routing: { provider: 'openai' }, parameters: { max_output_tokens: 50_000 } }, true);
    case 2: return () => execution(p, { operation: 'generate.text', messages: say(text), routing: { provider: 'anthropic', model: 'claude-haiku-4-5' }, parameters: { max_output_tokens: 8000 } });
    case 3: return () => h.call('POST', '/v1/execute', { key: p.clientKey, body: { model: 'claude-haiku', input: { messages: msgs, max_tokens: 8000 } } });
    case 4: return () => native(p, '/openai/v1/chat/completions', { model: 'gpt-4o-mini', messages: msgs });
    case 5: return () => native(p, '/openai/v1/chat/completions', { model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, max_tokens: 20_000, messages: msgs });
    case 6: return () => native(p, '/anthropic/v1/messages', { model: 'claude-haiku-4-5', max_tokens: 8000, messages: msgs });
    case 7: return () => native(p, '/anthropic/v1/messages', { model: 'claude-haiku-4-5', max_tokens: 8000, stream: true, messages: msgs });
    case 8: return () => native(p, '/google/v1beta/models/gemini-2.5-flash:generateContent', { contents: [{ role: 'user', parts: [{ text }] }] });
    case 9: return () => native(p, '/google/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', { contents: [{ role: 'user', parts: [{ text }] }], generationConfig: { maxOutputTokens: 9000 } });
    case 10: return () => native(p, '/deepseek/chat/completions', { model: 'deepseek-chat', messages: msgs, max_tokens: 8000 });
    default: return () => native(p, '/mistral/v1/chat/completions', { model: 'mistral-small-latest', messages: msgs, stream: true });
  }
}

async function daySpend(p: TestProject): Promise<{ reserved: number; settled: number }> {
  const { rows } = await h.tg.db.query("SELECT reserved_micros, settled_micros FROM spend_counters WHERE project_id = $1 AND period_kind = 'day'", [p.project.id]);
  return { reserved: Number(rows[0]?.reserved_micros ?? 0), settled: Number(rows[0]?.settled_micros ?? 0) };
}

describe('hard caps', () => {
  it('64 concurrent worst-case calls on every dispatching route never settle more than a 2,000 µ$ daily cap', async () => {
    const p = await h.project();
    const CAP = 2_000;
    await patchPolicy(h, p, { budgets: { daily_usd_micros: CAP } });
    const results = await Promise.all(Array.from({ length: 64 }, (_, i) => callOf(p, i)()));
    const allowed = results.filter((r) => r.status === 200).length;
    expect(results.every((r) => r.status === 200 || r.status === 403)).toBe(true);
    // How many fit depends on which calls reach governance first: a call whose ceiling is lowered
    // to what the day has left takes all of it, so one allowed call is a correct outcome too.
    expect(allowed).toBeGreaterThanOrEqual(1);
    // Streams record after their last byte; wait until nothing is held.
    for (let i = 0; i < 100 && (await daySpend(p)).reserved > 0; i++) await new Promise((r) => setTimeout(r, 100));
    const spend = await daySpend(p);
    expect(spend.reserved).toBe(0);
    expect(spend.settled).toBeGreaterThan(0);
    expect(spend.settled).toBeLessThanOrEqual(CAP);
    const { rows } = await h.tg.db.query('SELECT count(*)::int AS n, coalesce(sum(cost_usd_micros), 0)::int AS cost FROM calls WHERE project_id = $1 AND status = $2', [p.project.id, 'completed']);
    expect(rows[0].n).toBe(allowed);
    expect(rows[0].cost).toBe(spend.settled);
    // Ceilings were lowered to fit the day (every full-ceiling worst case here is above what it leaves),
    // and every allowed call used all of its ceiling: the settled spend is the reserved worst case.
    const { rows: permits } = await h.tg.db.query(
      "SELECT decision_details->'output_ceiling' AS c, reserved_cost_micros, actual_cost_micros FROM permits WHERE project_id = $1 AND decision = 'allow'",
      [p.project.id],
    );
    expect(permits.some((r) => r.c?.binding === 'day')).toBe(true);
    for (const r of permits) expect(Number(r.actual_cost_micros)).toBeLessThanOrEqual(Number(r.reserved_cost_micros));
  }, 120_000);

  const lowered: [string, string, (nonce: string) => unknown, (body: any) => unknown][] = [
    ['openai, no ceiling → max_completion_tokens added', '/openai/v1/chat/completions', (n) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: n }] }), (b) => b.max_completion_tokens],
    ['openai max_tokens lowered', '/openai/v1/chat/completions', (n) => ({ model: 'gpt-4o-mini', max_tokens: 100_000, messages: [{ role: 'user', content: n }] }), (b) => b.max_tokens],
    ['anthropic max_tokens lowered', '/anthropic/v1/messages', (n) => ({ model: 'claude-haiku-4-5', max_tokens: 100_000, messages: [{ role: 'user', content: n }] }), (b) => b.max_tokens],
    ['google generationConfig.maxOutputTokens added', '/google/v1beta/models/gemini-2.5-flash:generateContent', (n) => ({ contents: [{ role: 'user', parts: [{ text: n }] }] }), (b) => b.generationConfig?.maxOutputTokens],
    ['deepseek max_tokens lowered', '/deepseek/chat/completions', (n) => ({ model: 'deepseek-chat', max_tokens: 100_000, messages: [{ role: 'user', content: n }] }), (b) => b.max_tokens],
    ['mistral max_tokens lowered (stream)', '/mistral/v1/chat/completions', (n) => ({ model: 'mistral-small-latest', stream: true, max_tokens: 100_000, messages: [{ role: 'user', content: n }] }), (b) => b.max_tokens],
  ];

  it.each(lowered)('%s: the lowered ceiling reaches the upstream body and the header reports it', async (_name, path, body, field) => {
    const p = await h.project();
    // 300 µ$ a day: far below 100,000 output tokens (or the default 1,024), above 16 plus the input bound.
    await patchPolicy(h, p, { budgets: { daily_usd_micros: 300 } });
    const nonce = `ceiling ${randomUUID()} ${FILL}`;
    const res = await native(p, path, body(nonce));
    expect(res.status).toBe(200);
    const actions = JSON.parse(res.headers.get('x-svc-governance-actions') ?? '[]');
    expect(actions).toHaveLength(1);
    expect(actions[0].type).toMatch(/^max_output_tokens_(set|lowered)$/);
    const { rows } = await h.tg.db.query("SELECT decision_details->'output_ceiling' AS c, reserved_cost_micros FROM permits WHERE id = $1", [res.headers.get('x-svc-permit-id')]);
    const applied = rows[0].c.applied as number;
    expect(applied).toBeGreaterThanOrEqual(16);
    expect(applied).toBeLessThan(1024);
    expect(actions[0].message).toContain(`to ${applied}`);
    const sent = h.emu.received().filter((r) => JSON.stringify(r.body).includes(nonce.split(' ')[1]));
    expect(sent).toHaveLength(1);
    expect(field(sent[0].body)).toBe(applied);
    const spend = await daySpend(p);
    expect(spend.settled).toBeLessThanOrEqual(300);
    expect(spend.settled).toBeGreaterThan(0);
  });

  it('the envelope reports the ceiling it set in governance.actions, and the provider got it', async () => {
    const p = await h.project();
    await patchPolicy(h, p, { budgets: { monthly_usd_micros: 1_000_000 } });
    const nonce = randomUUID();
    const res = await h.call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say(`${nonce} ${FILL}`), routing: { provider: 'anthropic' } } });
    expect(res.status).toBe(200);
    expect(res.json.governance.actions).toEqual([
      { type: 'max_output_tokens_set', message: 'Tollgate set max_output_tokens to 1024 (the request set none; the project has spend caps)' },
      { type: 'proceed', message: 'The request may proceed' },
    ]);
    expect(res.json.usage.output_tokens).toBe(1024);
    const sent = h.emu.received().filter((r) => JSON.stringify(r.body).includes(nonce));
    expect((sent[0].body as any).max_tokens).toBe(1024);
  });

  it('POST /v1/jobs and POST /v1/execute: the lowered ceiling reaches the provider and the envelope says so', async () => {
    const p = await h.project();
    await patchPolicy(h, p, { budgets: { daily_usd_micros: 300 } });
    const jobNonce = randomUUID();
    const submitted = await h.call('POST', '/v1/jobs', { key: p.clientKey, body: { operation: 'generate.text', messages: say(`${jobNonce} ${FILL}`), parameters: { max_output_tokens: 50_000 } } });
    expect(submitted.status).toBe(202);
    const job = await waitUntil(async () => {
      const r = await h.call('GET', `/v1/jobs/${submitted.json.id}`, { key: p.clientKey });
      return r.json?.status === 'completed' || r.json?.status === 'failed' ? r.json : null;
    }, 60_000);
    expect(job.status).toBe('completed');
    const lowered = job.result.governance.actions[0];
    expect(lowered.type).toBe('max_output_tokens_lowered');
    const applied = Number(/to (\d+) to fit the daily cap/.exec(lowered.message)![1]);
    expect(applied).toBeLessThan(50_000);
    const sentJob = h.emu.received().filter((r) => JSON.stringify(r.body).includes(jobNonce));
    expect((sentJob[0].body as any).max_completion_tokens).toBe(applied);
    expect(job.result.usage.output_tokens).toBe(applied);

    expect((await daySpend(p)).settled).toBeLessThanOrEqual(300);

    const q = await h.project();
    await patchPolicy(h, q, { budgets: { daily_usd_micros: 300 } });
    const execNonce = randomUUID();
    const res = await h.call('POST', '/v1/execute', { key: q.clientKey, body: { model: 'gemini-flash', input: { contents: [{ role: 'user', parts: [{ text: `${execNonce} ${FILL}` }] }], generationConfig: { maxOutputTokens: 50_000 } } } });
    expect(res.status).toBe(200);
    expect(res.json.governance.actions[0].type).toBe('max_output_tokens_lowered');
    const sentExec = h.emu.received().filter((r) => JSON.stringify(r.body).includes(execNonce));
    expect((sentExec[0].body as any).generationConfig.maxOutputTokens).toBe(res.json.usage.output_tokens);
    expect((await daySpend(q)).settled).toBeLessThanOrEqual(300);
  }, 90_000);

  it('no cap: a request without a ceiling is sent as it was (nothing set, nothing reported)', async () => {
    const p = await h.project();
    const nonce = randomUUID();
    const res = await native(p, '/openai/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: nonce }] });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-governance-actions')).toBeNull();
    const sent = h.emu.received().filter((r) => JSON.stringify(r.body).includes(nonce));
    expect(sent[0].body).toEqual({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: nonce }] });
  });
});
