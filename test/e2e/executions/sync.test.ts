import { startHarness, Harness, say, eventTypes } from './helpers';
import type { TestProject } from '../../support/tollgate';

const ENVELOPE_KEYS = ['created_at', 'error', 'governance', 'id', 'object', 'output', 'output_assets', 'routing', 'status', 'status_code', 'timing', 'usage'];

describe('POST /v1/executions (sync) against the emulator', () => {
  let h: Harness;
  let p: TestProject;
  beforeAll(async () => {
    h = await startHarness();
    p = await h.project();
  });
  afterAll(async () => h?.close());

  const exec = (body: unknown, headers: Record<string, string> = {}) => h.call('POST', '/v1/executions', { key: p.clientKey, body, headers });

  describe('the operation × provider matrix', () => {
    const image = () => ({ type: 'image', asset: { source: 'url', url: `${h.emu.url}/assets/image/cat.png`, mime_type: 'image/png' } });
    const audio = () => ({ type: 'audio', asset: { source: 'url', url: `${h.emu.url}/assets/echo?text=hello%20from%20audio&type=audio/mpeg`, mime_type: 'audio/mpeg' } });
    const cases: [string, string, () => Record<string, unknown>, (env: any) => void][] = [
      ...['openai', 'anthropic', 'google', 'deepseek', 'mistral'].map(
        (prov) =>
          ['generate.text', prov, () => ({ messages: say('tell me about rivers') }), (env: any) => {
            expect(env.output.content[0]).toEqual({ type: 'text', role: 'assistant', text: expect.stringContaining('tell me about rivers') });
            expect(env.usage.input_tokens).toBeGreaterThan(0);
            expect(env.usage.output_tokens).toBeGreaterThan(0);
          }] as [string, string, () => Record<string, unknown>, (env: any) => void],
      ),
      ...['openai', 'google', 'mistral'].map(
        (prov) =>
          ['embed.text', prov, () => ({ inputs: [{ type: 'text', text: 'embed me' }] }), (env: any) => {
            expect(Array.isArray(env.output.embeddings)).toBe(true);
            expect(env.output.embeddings[0].length).toBeGreaterThan(0);
          }] as [string, string, () => Record<string, unknown>, (env: any) => void],
      ),
      ...['openai', 'google', 'mistral'].map(
        (prov) =>
          ['understand.image', prov, () => ({ inputs: [{ type: 'text', text: 'describe this picture' }, image()] }), (env: any) => {
            expect(env.output.content[0].text).toEqual(expect.any(String));
          }] as [string, string, () => Record<string, unknown>, (env: any) => void],
      ),
      ['generate.image', 'openai', () => ({ messages: say('a lighthouse at dusk') }), (env: any) => {
        expect(env.output_assets.length).toBeGreaterThan(0);
        expect(env.output_assets[0].type).toBe('image');
      }],
      ['generate.audio', 'openai', () => ({ messages: say('read this aloud') }), (env: any) => {
        expect(env.output_assets[0].type).toBe('audio');
      }],
      ...['openai', 'google'].map(
        (prov) =>
          ['transcribe.audio', prov, () => ({ inputs: [audio()] }), (env: any) => {
            expect(env.output.content[0].text).toEqual(expect.any(String));
          }] as [string, string, () => Record<string, unknown>, (env: any) => void],
      ),
    ];
    it.each(cases)('%s on %s', async (operation, provider, body, check) => {
      const res = await exec({ operation, routing: { provider }, ...body() });
      expect(res.status).toBe(200);
      const env = res.json;
      expect(Object.keys(env).sort()).toEqual(ENVELOPE_KEYS);
      expect(env).toMatchObject({ object: 'execution', status: 'completed', status_code: 200, error: null });
      expect(env.id).toMatch(/^exec_req_[0-9a-f]{32}$/);
      expect(env.routing).toMatchObject({ requested_provider: provider, requested_model: null, selected_provider: provider, reason_code: 'default_model_for_provider', fallback_occurred: false });
      expect(env.governance).toEqual({ decision: 'allow', reason: expect.any(String), actions: expect.any(Array), constraints: null, budgets: null });
      expect(Object.keys(env.usage).sort()).toEqual(['cost_usd_micros', 'estimated_final', 'input_tokens', 'metrics', 'output_tokens', 'total_tokens']);
      expect(Number.isInteger(env.usage.cost_usd_micros)).toBe(true);
      expect(env.timing.duration_ms).toBeGreaterThanOrEqual(0);
      expect(res.headers.get('x-svc-permit-id')).toMatch(/^permit_/);
      check(env);
    });
  });

  describe('routing', () => {
    it('explicit target', async () => {
      const res = await exec({ operation: 'generate.text', messages: say('hi'), routing: { provider: 'anthropic', model: 'claude-sonnet-4-5' } });
      expect(res.json.routing).toEqual({ requested_provider: 'anthropic', requested_model: 'claude-sonnet-4-5', selected_provider: 'anthropic', selected_model: 'claude-sonnet-4-5', reason_code: 'explicit_request', fallback_occurred: false });
    });
    it('provider only → that provider\'s public default model', async () => {
      const res = await exec({ operation: 'generate.text', messages: say('hi'), routing: { provider: 'google' } });
      expect(res.json.routing).toMatchObject({ selected_provider: 'google', selected_model: 'gemini-2.5-flash', reason_code: 'default_model_for_provider' });
    });
    it('model only → its provider', async () => {
      const res = await exec({ operation: 'generate.text', messages: say('hi'), routing: { model: 'mistral-large-latest' } });
      expect(res.json.routing).toMatchObject({ requested_provider: null, requested_model: 'mistral-large-latest', selected_provider: 'mistral', selected_model: 'mistral-large-latest', reason_code: 'provider_inferred_from_model' });
    });
    it('neither → the operation default', async () => {
      const res = await exec({ operation: 'embed.text', inputs: [{ type: 'text', text: 'x' }] });
      expect(res.json.routing).toMatchObject({ requested_provider: null, requested_model: null, selected_provider: 'openai', selected_model: 'text-embedding-3-small', reason_code: 'operation_default' });
    });
    it('operation/provider outside the matrix is a 400 before dispatch', async () => {
      const res = await exec({ operation: 'embed.text', inputs: [{ type: 'text', text: 'x' }], routing: { provider: 'anthropic' } });
      expect(res.status).toBe(400);
      expect(res.json.error.code).toBe('validation_error');
      expect(res.json.error.details.issues[0].path).toBe('routing.provider');
    });
  });

  describe('fallback', () => {
    it('a chain whose every target fails ends failed on its last target', async () => {
      const res = await exec({
        operation: 'generate.text',
        messages: say('[[emulator:status=503]] hello'),
        routing: { provider: 'openai', model: 'gpt-4o-mini', allow_cross_provider_fallback: true, fallback_chain: [{ provider: 'anthropic', model: 'claude-haiku-4-5' }] },
      });
      // The marker is in the prompt, so the fallback target fails too (the happy path is in governance.test.ts).
      expect(res.status).toBe(502);
      expect(res.json.routing).toMatchObject({ selected_provider: 'anthropic', fallback_occurred: true, reason_code: 'explicit_fallback' });
      const types = await eventTypes(h.tg, p.project.id, res.json.id);
      expect(types).toEqual(expect.arrayContaining(['fallback.triggered', 'fallback.selected_model']));
      expect(types.filter((t) => t === 'provider.request_sent')).toHaveLength(2);
      const tl = await h.call('GET', `/v1/requests/${res.json.id}/timeline`, { key: p.clientKey });
      expect(tl.json.events.map((e: any) => e.event_type)).toEqual(types);
    });
    it('no fallback without allow_cross_provider_fallback, and never for a non-retryable failure', async () => {
      const res = await exec({ operation: 'generate.text', messages: say('[[emulator:status=400]] hi'), routing: { provider: 'openai', model: 'gpt-4o-mini', allow_cross_provider_fallback: true, fallback_chain: [{ provider: 'anthropic', model: 'claude-haiku-4-5' }] } });
      expect(res.status).toBe(502);
      expect(res.json.routing.fallback_occurred).toBe(false);
    });
  });

  describe('upstream failures → 502 envelope', () => {
    it.each([
      ['500', '[[emulator:status=500]]'],
      ['429', '[[emulator:status=429,retry_after=3]]'],
    ])('upstream %s', async (_s, marker) => {
      const res = await exec({ operation: 'generate.text', messages: say(`${marker} hi`), routing: { provider: 'openai' } });
      expect(res.status).toBe(502);
      expect(res.json).toMatchObject({ status: 'failed', status_code: 502, output: null, output_assets: [], error: { code: 'upstream_error', message: expect.any(String) } });
      expect(res.json.governance.decision).toBe('allow');
      expect(res.headers.get('x-svc-permit-id')).toMatch(/^permit_/);
      const types = await eventTypes(h.tg, p.project.id, res.json.id);
      expect(types.slice(-3)).toEqual(['provider.response_received', 'usage.recorded', 'request.errored']);
    });
  });

  describe('readback and metrics', () => {
    it('GET /v1/executions/:id returns the stored envelope; unknown ids and other projects are 404', async () => {
      const res = await exec({ operation: 'generate.text', messages: say('readback') });
      const back = await h.call('GET', `/v1/executions/${res.json.id}`, { key: p.clientKey });
      expect(back.status).toBe(200);
      expect(back.json).toEqual(res.json);
      expect(back.headers.get('x-svc-permit-id')).toBe(res.headers.get('x-svc-permit-id'));
      const other = await h.project();
      expect((await h.call('GET', `/v1/executions/${res.json.id}`, { key: other.clientKey })).status).toBe(404);
      expect((await h.call('GET', `/v1/executions/exec_req_nope`, { key: p.clientKey })).status).toBe(404);
    });
    it('GET /v1/metrics/executions counts, percentiles and spend', async () => {
      const q = await h.project();
      const run = (body: unknown) => h.call('POST', '/v1/executions', { key: q.clientKey, body });
      await run({ operation: 'generate.text', messages: say('one') });
      await run({ operation: 'generate.text', messages: say('two'), routing: { provider: 'anthropic' } });
      await run({ operation: 'generate.text', messages: say('[[emulator:status=500]] three') });
      const m = await h.call('GET', '/v1/metrics/executions?window_seconds=3600', { key: q.clientKey });
      expect(m.status).toBe(200);
      expect(m.json).toMatchObject({ object: 'execution_metrics', total: 3, counts: { completed: 2, failed: 1, denied: 0 }, by_status_code: { '200': 2, '502': 1 } });
      expect(m.json.latency_ms.p50).toEqual(expect.any(Number));
      expect(m.json.latency_ms.p99).toBeGreaterThanOrEqual(m.json.latency_ms.p50);
      expect(m.json.spend.by_provider_model.map((r: any) => r.provider).sort()).toEqual(['anthropic', 'openai']);
      expect(m.json.spend.total_usd_micros).toBeGreaterThan(0);
    });
  });

  describe('POST /v1/execute', () => {
    const run = (body: unknown) => h.call('POST', '/v1/execute', { key: p.clientKey, body });
    it('provider-shaped openai chat with an explicit provider', async () => {
      const res = await run({ provider: 'openai', model: 'gpt-4o-mini', input: { messages: [{ role: 'user', content: 'hi there' }], max_tokens: 20 } });
      expect(res.status).toBe(200);
      expect(Object.keys(res.json).sort()).toEqual([...ENVELOPE_KEYS, 'resolved'].sort());
      expect(res.json.resolved).toEqual({ provider: 'openai', model: 'gpt-4o-mini', alias: null });
      expect(res.json.usage.metrics).toBeUndefined();
      expect(res.headers.get('x-svc-permit-id')).toMatch(/^permit_/);
    });
    it('provider omitted: inferred from an alias', async () => {
      const res = await run({ model: 'claude-haiku', input: { messages: [{ role: 'user', content: 'hello' }], max_tokens: 50, system: 'be brief' } });
      expect(res.status).toBe(200);
      expect(res.json.resolved).toEqual({ provider: 'anthropic', model: 'claude-haiku-4-5', alias: 'claude-haiku' });
      expect(res.json.routing).toMatchObject({ requested_provider: null, requested_model: 'claude-haiku', selected_provider: 'anthropic', reason_code: 'provider_inferred_from_model' });
    });
    it('google contents and embeddings inferred from the payload', async () => {
      const gen = await run({ provider: 'google', model: 'gemini-2.5-flash', input: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] } });
      expect(gen.status).toBe(200);
      const emb = await run({ provider: 'openai', model: 'text-embedding-3-small', input: { input: ['a', 'b'] } });
      expect(emb.status).toBe(200);
      expect(emb.json.output.embeddings).toHaveLength(2);
    });
    it('unknown or ambiguous target → 400', async () => {
      const res = await run({ model: 'no-such-model', input: { messages: [{ role: 'user', content: 'x' }] } });
      expect(res.status).toBe(400);
      expect(res.json.error.details.issues[0].path).toBe('provider');
      const op = await run({ provider: 'anthropic', model: 'claude-haiku-4-5', input: { input: 'embed' } });
      expect(op.status).toBe(400);
    });
    it('rejects stream, project_id and context', async () => {
      for (const body of [
        { provider: 'openai', model: 'gpt-4o-mini', input: { messages: [{ role: 'user', content: 'x' }], stream: true } },
        { provider: 'openai', model: 'gpt-4o-mini', input: { messages: [] }, project_id: 'p' },
        { provider: 'openai', model: 'gpt-4o-mini', input: { messages: [] }, context: {} },
      ]) {
        const res = await run(body);
        expect(res.status).toBe(400);
      }
    });
    it('upstream failure → 502 envelope with resolved', async () => {
      const res = await run({ provider: 'openai', model: 'gpt-4o-mini', input: { messages: [{ role: 'user', content: '[[emulator:status=500]] x' }] } });
      expect(res.status).toBe(502);
      expect(res.json.resolved.provider).toBe('openai');
      expect(res.json.error.code).toBe('upstream_error');
    });
  });

  describe('validation (400 validation_error naming the field)', () => {
    const bad: [string, unknown, string][] = [
      ['both messages and inputs', { operation: 'generate.text', messages: say('x'), inputs: [{ type: 'text', text: 'x' }] }, ''],
      ['neither messages nor inputs', { operation: 'generate.text' }, ''],
      ['project_id', { operation: 'generate.text', messages: say('x'), project_id: 'proj_1' }, 'project_id'],
      ['context', { operation: 'generate.text', messages: say('x'), context: {} }, 'context'],
      ['unknown operation', { operation: 'do.magic', messages: say('x') }, 'operation'],
      ['unsupported operation', { operation: 'generate.video', messages: say('x') }, 'operation'],
      ['provider_options key not a provider', { operation: 'generate.text', messages: say('x'), provider_options: { acme: {} } }, 'provider_options.acme'],
      ['provider_options value not an object', { operation: 'generate.text', messages: say('x'), provider_options: { openai: 3 } }, 'provider_options.openai'],
      ['transcribe.audio without audio', { operation: 'transcribe.audio', inputs: [{ type: 'text', text: 'x' }] }, 'inputs'],
      ['understand.image without image', { operation: 'understand.image', inputs: [{ type: 'text', text: 'x' }] }, 'inputs'],
      ['understand.image with messages', { operation: 'understand.image', messages: say('x') }, 'inputs'],
      ['generate.audio with an image input', { operation: 'generate.audio', inputs: [{ type: 'image', asset: { source: 'url', url: 'http://x/y.png' } }] }, 'inputs'],
      ['fallback without a chain', { operation: 'generate.text', messages: say('x'), routing: { provider: 'openai', allow_cross_provider_fallback: true } }, 'routing.fallback_chain'],
      ['chain without allow', { operation: 'generate.text', messages: say('x'), routing: { fallback_chain: [{ provider: 'anthropic', model: 'claude-haiku-4-5' }] } }, 'routing.allow_cross_provider_fallback'],
      ['fallback outside openai/anthropic', { operation: 'generate.text', messages: say('x'), routing: { provider: 'openai', allow_cross_provider_fallback: true, fallback_chain: [{ provider: 'google', model: 'gemini-2.5-flash' }] } }, 'routing.fallback_chain.0.provider'],
      ['fallback from a google primary', { operation: 'generate.text', messages: say('x'), routing: { provider: 'google', allow_cross_provider_fallback: true, fallback_chain: [{ provider: 'openai', model: 'gpt-4o-mini' }] } }, 'routing.fallback_chain'],
      ['fallback on a stream', { operation: 'generate.text', mode: 'stream', messages: say('x'), routing: { provider: 'openai', allow_cross_provider_fallback: true, fallback_chain: [{ provider: 'anthropic', model: 'claude-haiku-4-5' }] } }, 'routing.fallback_chain'],
      ['fallback for embed.text', { operation: 'embed.text', inputs: [{ type: 'text', text: 'x' }], routing: { provider: 'openai', allow_cross_provider_fallback: true, fallback_chain: [{ provider: 'anthropic', model: 'claude-haiku-4-5' }] } }, 'routing.fallback_chain'],
      ['stream for embed.text', { operation: 'embed.text', mode: 'stream', inputs: [{ type: 'text', text: 'x' }] }, 'mode'],
      ['unknown provider', { operation: 'generate.text', messages: say('x'), routing: { provider: 'acme' } }, 'routing.provider'],
      ['non-numeric parameter', { operation: 'generate.text', messages: say('x'), parameters: { temperature: 'hot' } }, 'parameters.temperature'],
      ['unknown top-level field', { operation: 'generate.text', messages: say('x'), stream: true }, ''],
      ['ambiguous/unknown model only', { operation: 'generate.text', messages: say('x'), routing: { model: 'no-such-model' } }, 'routing.model'],
    ];
    it.each(bad)('%s', async (_name, body, path) => {
      const res = await exec(body);
      expect(res.status).toBe(400);
      expect(res.json.error.code).toBe('validation_error');
      expect(res.json.error.details.issues.map((i: any) => i.path)).toContain(path);
    });
    it('bad X-Svc-Workflow-Id and unknown workflow', async () => {
      expect((await exec({ operation: 'generate.text', messages: say('x') }, { 'x-svc-workflow-id': 'bad id!' })).status).toBe(400);
      const res = await exec({ operation: 'generate.text', messages: say('x') }, { 'x-svc-workflow-id': 'never-declared' });
      expect(res.status).toBe(403);
      expect(res.json).toMatchObject({ status: 'denied', error: { code: 'denied' }, governance: { decision: 'deny' } });
      expect(JSON.stringify(res.json)).toContain('workflow_intent.not_found');
    });
    it('mode stream with a non-SSE Accept is 406', async () => {
      const res = await exec({ operation: 'generate.text', mode: 'stream', messages: say('x') }, { accept: 'application/json' });
      expect(res.status).toBe(406);
    });
    it('requires a project API key', async () => {
      const res = await h.call('POST', '/v1/executions', { body: { operation: 'generate.text', messages: say('x') } });
      expect(res.status).toBe(401);
    });
  });
});
