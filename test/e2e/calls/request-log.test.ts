import { createApiKey } from '../../../src/db/repositories/api-keys';
import { startHarness, Harness, say } from '../executions/helpers';
import type { TestProject } from '../../support/tollgate';

const CALL_KEYS = [
  'completed_at', 'created_at', 'duration_ms', 'error', 'id', 'job_id', 'key_id', 'mode', 'model', 'object', 'operation', 'permit_id',
  'provider', 'route', 'session_id', 'status', 'status_code', 'usage', 'workflow_id',
];

describe('GET /v1/calls (the request log)', () => {
  let h: Harness;
  let p: TestProject;
  let other: TestProject;
  let secondKey: { id: string; key: string };
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    h = await startHarness();
    p = await h.project();
    other = await h.project();
    const k = await createApiKey(h.tg.db, { projectId: p.project.id, scope: 'client' });
    secondKey = { id: k.record.id, key: k.key };
    const exec = (body: unknown, key = p.clientKey, headers: Record<string, string> = {}) => h.call('POST', '/v1/executions', { key, body, headers });
    // One after the other, so their order is known.
    let r = await exec({ operation: 'generate.text', messages: say('first'), routing: { provider: 'openai', model: 'gpt-4o-mini' } });
    expect(r.status).toBe(200);
    ids.first = r.json.id;
    r = await exec({ operation: 'generate.text', messages: say('second'), routing: { provider: 'anthropic', model: 'claude-sonnet-4-5' } }, secondKey.key);
    expect(r.status).toBe(200);
    ids.anthropic = r.json.id;
    r = await exec({ operation: 'generate.text', messages: say('[[emulator:status=400]] broken'), routing: { provider: 'openai', model: 'gpt-4o-mini' } });
    expect(r.json.status).toBe('failed');
    ids.failed = r.json.id;
    r = await exec({ operation: 'generate.text', messages: say('joined') }, p.clientKey, { 'x-svc-workflow-id': 'never-declared' });
    expect(r.status).toBe(403);
    ids.denied = r.json.id;
    r = await h.call('POST', '/v1/proxy/openai/v1/chat/completions', { key: p.clientKey, body: { model: 'gpt-4o-mini', messages: say('via the proxy') } });
    expect(r.status).toBe(200);
    ids.proxy = r.headers.get('x-svc-request-id')!;
    // Another project's call, which no read of this project may show.
    r = await exec({ operation: 'generate.text', messages: say('elsewhere') }, other.clientKey);
    expect(r.status).toBe(200);
    ids.other = r.json.id;
  });
  afterAll(async () => h?.close());

  const list = (query = '', key = p.clientKey) => h.call('GET', `/v1/calls${query}`, { key });

  it('lists the project\'s calls newest first, each as its summary', async () => {
    const res = await list();
    expect(res.status).toBe(200);
    expect(res.json.object).toBe('list');
    expect(res.json.next_cursor).toBeNull();
    expect(res.json.data.map((c: any) => c.id)).toEqual([ids.proxy, ids.denied, ids.failed, ids.anthropic, ids.first]);
    for (const c of res.json.data) expect(Object.keys(c).sort()).toEqual(CALL_KEYS);
    const [proxy, denied, failed, anthropic, first] = res.json.data;
    expect(first).toMatchObject({
      object: 'call', route: 'executions', operation: 'generate.text', mode: 'sync', status: 'completed', status_code: 200,
      provider: 'openai', model: 'gpt-4o-mini', error: null, workflow_id: null, job_id: null,
      permit_id: expect.stringMatching(/^permit_/), key_id: expect.stringMatching(/^key_/),
    });
    expect(first.usage.input_tokens).toBeGreaterThan(0);
    expect(first.usage.output_tokens).toBeGreaterThan(0);
    expect(Number.isInteger(first.usage.cost_usd_micros)).toBe(true);
    expect(Date.parse(first.completed_at)).toBeGreaterThanOrEqual(Date.parse(first.created_at));
    expect(anthropic).toMatchObject({ provider: 'anthropic', model: 'claude-sonnet-4-5', key_id: secondKey.id });
    expect(first.key_id).not.toBe(secondKey.id);
    expect(failed).toMatchObject({ status: 'failed', error: { code: expect.any(String) } });
    expect(denied).toMatchObject({ status: 'denied', status_code: 403, workflow_id: 'never-declared', error: { code: 'denied' } });
    expect(denied.usage.cost_usd_micros).toBe(0);
    expect(proxy).toMatchObject({ route: 'proxy', status: 'completed', provider: 'openai', key_id: first.key_id });
    expect(res.json.data.every((c: any) => c.session_id === null)).toBe(true);
  });

  it('matches the execution envelope of the same call', async () => {
    const env = (await h.call('GET', `/v1/executions/${ids.first}`, { key: p.clientKey })).json;
    const call = (await h.call('GET', `/v1/calls/${ids.first}`, { key: p.clientKey })).json;
    expect(call).toMatchObject({
      id: env.id, created_at: env.created_at, status: env.status, status_code: env.status_code,
      provider: env.routing.selected_provider, model: env.routing.selected_model, duration_ms: env.timing.duration_ms,
      usage: { input_tokens: env.usage.input_tokens, output_tokens: env.usage.output_tokens, cost_usd_micros: env.usage.cost_usd_micros },
    });
  });

  it.each([
    ['status=failed', ['failed']],
    ['status=denied', ['denied']],
    ['status=completed', ['proxy', 'anthropic', 'first']],
    ['provider=anthropic', ['anthropic']],
    ['model=gpt-4o-mini', ['proxy', 'denied', 'failed', 'first']],
    ['route=proxy', ['proxy']],
    ['workflow_id=never-declared', ['denied']],
    ['status=completed&provider=openai', ['proxy', 'first']],
  ])('filters: %s', async (query, expected) => {
    const res = await list(`?${query}`);
    expect(res.status).toBe(200);
    expect(res.json.data.map((c: any) => c.id)).toEqual(expected.map((k) => ids[k]));
  });

  it('filters by key and by time window', async () => {
    const byKey = await list(`?key_id=${secondKey.id}`);
    expect(byKey.json.data.map((c: any) => c.id)).toEqual([ids.anthropic]);
    const all = (await list()).json.data;
    const failedAt = all.find((c: any) => c.id === ids.failed).created_at;
    const from = await list(`?created_at_gte=${encodeURIComponent(failedAt)}`);
    expect(from.json.data.map((c: any) => c.id)).toEqual([ids.proxy, ids.denied, ids.failed]);
    const until = await list(`?created_at_lte=${encodeURIComponent(failedAt)}`);
    expect(until.json.data.map((c: any) => c.id)).toEqual([ids.failed, ids.anthropic, ids.first]);
    expect((await list('?created_at_gte=2000-01-01T00:00:00Z&created_at_lte=2000-01-02T00:00:00Z')).json.data).toEqual([]);
  });

  it('pages with a cursor, every call once and in order', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await list(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.json.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.json.data.map((c: any) => c.id));
      cursor = res.json.next_cursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([ids.proxy, ids.denied, ids.failed, ids.anthropic, ids.first]);
    // A cursor keeps the filters it is used with.
    const page1 = await list('?status=completed&limit=1');
    const page2 = await list(`?status=completed&limit=1&cursor=${page1.json.next_cursor}`);
    expect(page2.json.data.map((c: any) => c.id)).toEqual([ids.anthropic]);
  });

  it('answers bad queries with a 400 naming the parameter', async () => {
    const cases: [string, string][] = [
      ['?limit=0', 'query.limit'],
      ['?limit=101', 'query.limit'],
      ['?status=running', 'query.status'],
      ['?provider=acme', 'query.provider'],
      ['?created_at_gte=yesterday', 'query.created_at_gte'],
      ['?created_at_gte=2026-01-02T00:00:00Z&created_at_lte=2026-01-01T00:00:00Z', 'query.created_at_gte'],
      ['?route=voice', 'query.route'],
      ['?session_id=', 'query.session_id'],
      ['?colour=blue', 'query'],
    ];
    for (const [query, path] of cases) {
      const res = await list(query);
      expect(res.status).toBe(400);
      expect(res.json.error.code).toBe('validation_error');
      expect(res.json.error.details.issues.map((i: any) => i.path).join(' ')).toContain(path);
    }
    const bad = await list('?cursor=not-a-cursor');
    expect(bad.status).toBe(400);
    expect(bad.json.error.details.issues[0].code).toBe('invalid_cursor');
  });

  it('keeps projects apart: another project\'s call is 404, and never listed', async () => {
    expect((await h.call('GET', `/v1/calls/${ids.other}`, { key: p.clientKey })).status).toBe(404);
    expect((await h.call('GET', '/v1/calls/exec_req_00000000000000000000000000000000', { key: p.clientKey })).status).toBe(404);
    const theirs = await list('', other.clientKey);
    expect(theirs.json.data.map((c: any) => c.id)).toEqual([ids.other]);
    expect((await h.call('GET', '/v1/calls')).status).toBe(401);
  });
});
