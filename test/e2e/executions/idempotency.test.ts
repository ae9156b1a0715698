import { startHarness, Harness, say, eventTypes } from './helpers';
import type { TestProject } from '../../support/tollgate';

describe('Idempotency-Key on the execution routes', () => {
  let h: Harness;
  let p: TestProject;
  beforeAll(async () => {
    h = await startHarness();
    p = await h.project();
  });
  afterAll(async () => h?.close());

  const sent = async (id: string) => (await eventTypes(h.tg, p.project.id, id)).filter((t) => t === 'provider.request_sent').length;

  it('sequential retry with the same key and payload returns the same execution, dispatched once', async () => {
    const body = { operation: 'generate.text', messages: say('once only') };
    const headers = { 'idempotency-key': 'seq-1' };
    const a = await h.call('POST', '/v1/executions', { key: p.clientKey, body, headers });
    const b = await h.call('POST', '/v1/executions', { key: p.clientKey, body, headers });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.json).toEqual(a.json);
    expect(b.headers.get('x-svc-permit-id')).toBe(a.headers.get('x-svc-permit-id'));
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(await sent(a.json.id)).toBe(1);
    const { rows } = await h.tg.db.query('SELECT count(*)::int AS n FROM permits WHERE project_id = $1 AND request_id = $2', [p.project.id, a.json.id]);
    expect(rows[0].n).toBe(1);
  });

  it('concurrent requests with the same key join the in-flight execution and dispatch once', async () => {
    // 5 s at the provider: every duplicate arrives while the first is in flight, even on a stalled machine.
    const body = { operation: 'generate.text', messages: say('[[emulator:latency_ms=5000]] concurrent') };
    const headers = { 'idempotency-key': 'conc-1' };
    const providerCallsBefore = h.emu.requestCount();
    const all = await Promise.all(Array.from({ length: 6 }, () => h.call('POST', '/v1/executions', { key: p.clientKey, body, headers })));
    const ids = new Set(all.map((r) => r.json.id));
    expect(ids.size).toBe(1);
    for (const r of all) expect(r.status).toBe(200);
    const [id] = [...ids];
    expect(await sent(id)).toBe(1);
    const { rows } = await h.tg.db.query("SELECT count(*)::int AS n FROM permits WHERE project_id = $1 AND route = 'executions' AND request_id = $2", [p.project.id, id]);
    expect(rows[0].n).toBe(1);
    const ex = await h.tg.db.query('SELECT count(*)::int AS n FROM calls WHERE project_id = $1 AND idempotency_key = $2', [p.project.id, 'conc-1']);
    expect(ex.rows[0].n).toBe(1);
    // Counted at the provider (the emulator), not only in our own records.
    expect(h.emu.requestCount() - providerCallsBefore).toBe(1);
  });

  it('same key with a different payload → 409 idempotency_conflict naming the key', async () => {
    const headers = { 'idempotency-key': 'conf-1' };
    await h.call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('first') }, headers });
    const res = await h.call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('second') }, headers });
    expect(res.status).toBe(409);
    expect(res.json).toEqual({ error: { code: 'idempotency_conflict', message: expect.any(String), details: { idempotency_key: 'conf-1' } } });
  });

  it('replays denied and failed outcomes with their status, and keys are per project and per route', async () => {
    const headers = { 'idempotency-key': 'fail-1' };
    const body = { operation: 'generate.text', messages: say('[[emulator:status=500]] boom') };
    const a = await h.call('POST', '/v1/executions', { key: p.clientKey, body, headers });
    const b = await h.call('POST', '/v1/executions', { key: p.clientKey, body, headers });
    expect(a.status).toBe(502);
    expect(b.status).toBe(502);
    expect(b.json.id).toBe(a.json.id);
    // Another project may use the same key.
    const q = await h.project();
    const c = await h.call('POST', '/v1/executions', { key: q.clientKey, body, headers });
    expect(c.json.id).not.toBe(a.json.id);
    // /v1/execute has its own scope.
    const ex = { provider: 'openai', model: 'gpt-4o-mini', input: { messages: [{ role: 'user', content: 'via execute' }] } };
    const e1 = await h.call('POST', '/v1/execute', { key: p.clientKey, body: ex, headers });
    const e2 = await h.call('POST', '/v1/execute', { key: p.clientKey, body: ex, headers });
    expect(e1.status).toBe(200);
    expect(e2.json).toEqual(e1.json);
    expect(await sent(e1.json.id)).toBe(1);
    const e3 = await h.call('POST', '/v1/execute', { key: p.clientKey, body: { ...ex, model: 'gpt-4o' }, headers });
    expect(e3.status).toBe(409);
  });

  it('a stream key is not replayed: 409, and the call is not repeated', async () => {
    const init = { method: 'POST', headers: { authorization: `Bearer ${p.clientKey}`, 'content-type': 'application/json', accept: 'text/event-stream', 'idempotency-key': 'stream-1' }, body: JSON.stringify({ operation: 'generate.text', mode: 'stream', messages: say('stream once') }) };
    const a = await fetch(`${h.tg.url}/v1/executions`, init);
    expect(a.status).toBe(200);
    await a.text();
    const b = await fetch(`${h.tg.url}/v1/executions`, init);
    expect(b.status).toBe(409);
    expect(((await b.json()) as any).error.code).toBe('idempotency_stream_not_replayable');
  });

  it('rejects a malformed Idempotency-Key', async () => {
    const res = await h.call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('x') }, headers: { 'idempotency-key': 'x'.repeat(300) } });
    expect(res.status).toBe(400);
  });
});
