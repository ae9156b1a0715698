/** Idempotency-Key on the proxy routes: replay (sync and stream), 409 on a different payload, in-flight duplicates dispatch once. */
import OpenAI from 'openai';
import { countEvents, startHarness, Harness } from '../executions/helpers';
import type { TestProject } from '../../support/tollgate';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.close());

async function sentCount(projectId: string): Promise<number> {
  return countEvents(h.tg, projectId, 'provider.request_sent');
}

async function post(p: TestProject, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${h.tg.url}/v1/proxy${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${p.clientKey}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const chat = (text: string, extra: Record<string, unknown> = {}) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: text }], ...extra });

describe('proxy Idempotency-Key', () => {
  it('same key and payload replays the cached response (status, headers, body) without a second dispatch', async () => {
    const p = await h.project();
    const first = await post(p, '/openai/v1/chat/completions', chat('once only'), { 'idempotency-key': 'k-sync' });
    expect(first.status).toBe(200);
    const again = await post(p, '/openai/v1/chat/completions', chat('once only'), { 'idempotency-key': 'k-sync' });
    expect(again.status).toBe(200);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('x-svc-permit-id')).toBe(first.headers.get('x-svc-permit-id'));
    expect(again.headers.get('content-type')).toContain('application/json');
    expect(await sentCount(p.project.id)).toBe(1);
    const { rows } = await h.tg.db.query(`SELECT count(*)::int AS n FROM calls WHERE project_id = $1`, [p.project.id]);
    expect(rows[0].n).toBe(1);
  });

  it('the openai SDK replays through its own client with the same key', async () => {
    const p = await h.project();
    const client = new OpenAI({ apiKey: p.clientKey, baseURL: `${h.tg.url}/v1/proxy/openai/v1`, maxRetries: 0 });
    const a = await client.chat.completions.create(chat('sdk replay') as never, { headers: { 'Idempotency-Key': 'sdk-1' } });
    const b = await client.chat.completions.create(chat('sdk replay') as never, { headers: { 'Idempotency-Key': 'sdk-1' } });
    expect(b).toEqual(a);
    expect(await sentCount(p.project.id)).toBe(1);
  });

  it('a stream is cached whole and replayed as the same SSE body', async () => {
    const p = await h.project();
    const body = chat('stream replay', { stream: true, stream_options: { include_usage: true } });
    const first = await post(p, '/openai/v1/chat/completions', body, { 'idempotency-key': 'k-stream' });
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toContain('text/event-stream');
    expect(first.text).toContain('data: [DONE]');
    const again = await post(p, '/openai/v1/chat/completions', body, { 'idempotency-key': 'k-stream' });
    expect(again.status).toBe(200);
    expect(again.headers.get('content-type')).toContain('text/event-stream');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    expect(await sentCount(p.project.id)).toBe(1);
  });

  it('same key, different payload → 409 idempotency_conflict in the provider-native shape', async () => {
    const p = await h.project();
    await post(p, '/openai/v1/chat/completions', chat('payload A'), { 'idempotency-key': 'k-conflict' });
    const res = await post(p, '/openai/v1/chat/completions', chat('payload B'), { 'idempotency-key': 'k-conflict' });
    expect(res.status).toBe(409);
    expect(JSON.parse(res.text)).toMatchObject({ error: { code: 'idempotency_conflict', type: 'idempotency_error', param: null, idempotency_key: 'k-conflict' } });
    const client = new OpenAI({ apiKey: p.clientKey, baseURL: `${h.tg.url}/v1/proxy/openai/v1`, maxRetries: 0 });
    const err = await client.chat.completions.create(chat('payload C') as never, { headers: { 'Idempotency-Key': 'k-conflict' } }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.ConflictError);
    expect(err.code).toBe('idempotency_conflict');
    // Anthropic shape for the anthropic proxy.
    const a1 = await fetch(`${h.tg.url}/v1/proxy/anthropic/v1/messages`, { method: 'POST', headers: { 'x-api-key': p.clientKey, 'content-type': 'application/json', 'idempotency-key': 'k-a' }, body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 20, messages: [{ role: 'user', content: 'x' }] }) });
    expect(a1.status).toBe(200);
    const a2 = await fetch(`${h.tg.url}/v1/proxy/anthropic/v1/messages`, { method: 'POST', headers: { 'x-api-key': p.clientKey, 'content-type': 'application/json', 'idempotency-key': 'k-a' }, body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 20, messages: [{ role: 'user', content: 'y' }] }) });
    expect(a2.status).toBe(409);
    expect(await a2.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('idempotency_conflict') } });
  });

  it('the same key on another provider proxy is a separate scope', async () => {
    const p = await h.project();
    const a = await post(p, '/openai/v1/chat/completions', chat('scoped'), { 'idempotency-key': 'k-scope' });
    const b = await post(p, '/mistral/v1/chat/completions', { model: 'mistral-small-latest', messages: [{ role: 'user', content: 'scoped' }] }, { 'idempotency-key': 'k-scope' });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(await sentCount(p.project.id)).toBe(2);
  });

  it('concurrent duplicates while the first is in flight wait for it and dispatch once', async () => {
    const p = await h.project();
    const body = chat('concurrent');
    const providerCallsBefore = h.emu.requestCount();
    // 5 s at the provider: every duplicate arrives while the first is in flight, even on a stalled machine.
    const results = await Promise.all(
      [0, 1, 2, 3].map((i) => new Promise((r) => setTimeout(r, i * 20)).then(() => post(p, '/openai/v1/chat/completions', body, { 'idempotency-key': 'k-concurrent', 'x-emulator-latency-ms': '5000' }))),
    );
    for (const r of results) expect(r.status).toBe(200);
    expect(new Set(results.map((r) => r.text)).size).toBe(1);
    expect(results.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(3);
    expect(await sentCount(p.project.id)).toBe(1);
    // Counted at the provider (the emulator), not only in our own records.
    expect(h.emu.requestCount() - providerCallsBefore).toBe(1);
  });

  it('a throttled (429) or failed (5xx) answer is not cached: a retry with the same key runs again', async () => {
    const p = await h.project();
    const bad = await post(p, '/openai/v1/chat/completions', chat('flaky'), { 'idempotency-key': 'k-retry', 'x-emulator-status': '500' });
    expect(bad.status).toBe(500);
    const good = await post(p, '/openai/v1/chat/completions', chat('flaky'), { 'idempotency-key': 'k-retry' });
    expect(good.status).toBe(200);
    expect(good.headers.get('idempotent-replayed')).toBeNull();
    expect(await sentCount(p.project.id)).toBe(2);
  });

  it('multipart: the SDK’s random boundary does not change the payload identity', async () => {
    const p = await h.project();
    const form = (boundary: string) =>
      [`--${boundary}`, 'Content-Disposition: form-data; name="model"', '', 'whisper-1', `--${boundary}`, 'Content-Disposition: form-data; name="file"; filename="a.mp3"', 'Content-Type: audio/mpeg', '', 'idempotent audio', `--${boundary}--`, ''].join('\r\n');
    const send = (boundary: string) =>
      fetch(`${h.tg.url}/v1/proxy/openai/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${p.clientKey}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'idempotency-key': 'k-multipart' },
        body: form(boundary),
      });
    const a = await send('boundaryAAA111');
    expect(a.status).toBe(200);
    expect(((await a.json()) as { text: string }).text).toBe('idempotent audio');
    const b = await send('boundaryBBB222');
    expect(b.status).toBe(200);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(await sentCount(p.project.id)).toBe(1);
  });
});
