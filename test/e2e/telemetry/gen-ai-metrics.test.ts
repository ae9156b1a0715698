/**
 * The GenAI client metrics on GET /metrics (src/telemetry/gen-ai.ts): `gen_ai.client.token.usage`
 * and `gen_ai.client.operation.duration` as Prometheus histograms, one observation per provider
 * attempt on the executions path and the native proxy, `error_type` on a failed attempt. Each test
 * reads the change between two scrapes.
 */
import { say, startHarness, type Harness } from '../executions/helpers';

type Labels = Record<string, string>;

/** Sum of the samples of `name` whose labels include `want` (and lack the `absent` ones). */
function sample(text: string, name: string, want: Labels, absent: string[] = []): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels: Labels = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    if (Object.entries(want).every(([k, v]) => labels[k] === v) && absent.every((k) => !(k in labels))) sum += Number(m[3]);
  }
  return sum;
}

describe('GenAI client metrics on /metrics', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  const scrape = async () => {
    const res = await h.call('GET', '/metrics');
    expect(res.status).toBe(200);
    return res.text;
  };
  const chat = { gen_ai_operation_name: 'chat', gen_ai_provider_name: 'openai', gen_ai_request_model: 'gpt-4o-mini' };

  it('POST /v1/executions: token usage by type and the duration of the provider call', async () => {
    const p = await h.project();
    const before = await scrape();
    const res = await h.call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('hello metrics'), routing: { provider: 'openai', model: 'gpt-4o-mini' } } });
    expect(res.status).toBe(200);
    const after = await scrape();
    const delta = (name: string, want: Labels, absent: string[] = []) => sample(after, name, want, absent) - sample(before, name, want, absent);

    expect(after).toMatch(/# TYPE gen_ai_client_token_usage histogram/);
    expect(after).toMatch(/# TYPE gen_ai_client_operation_duration_seconds histogram/);
    expect(delta('gen_ai_client_token_usage_sum', { ...chat, gen_ai_token_type: 'input' })).toBe(res.json.usage.input_tokens);
    expect(delta('gen_ai_client_token_usage_sum', { ...chat, gen_ai_token_type: 'output' })).toBe(res.json.usage.output_tokens);
    expect(delta('gen_ai_client_token_usage_count', { ...chat, gen_ai_token_type: 'input' })).toBe(1);
    // The answering model is a label; a successful attempt has no error_type.
    expect(after).toMatch(/gen_ai_client_token_usage_count\{[^}]*gen_ai_response_model="gpt-4o-mini[^"]*"/);
    expect(delta('gen_ai_client_operation_duration_seconds_count', chat, ['error_type'])).toBe(1);
    expect(delta('gen_ai_client_operation_duration_seconds_sum', chat, ['error_type'])).toBeGreaterThan(0);
  });

  it('embeddings and the native proxy are counted under their operation names', async () => {
    const p = await h.project();
    const before = await scrape();
    const emb = await h.call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'embed.text', inputs: [{ type: 'text', text: 'vector me' }], routing: { provider: 'openai', model: 'text-embedding-3-small' } } });
    expect(emb.status).toBe(200);
    const proxied = await h.call('POST', '/v1/proxy/openai/v1/chat/completions', { key: p.clientKey, body: { model: 'gpt-4o-mini', messages: say('hello proxy metrics') } });
    expect(proxied.status).toBe(200);
    const after = await scrape();
    const delta = (name: string, want: Labels) => sample(after, name, want) - sample(before, name, want);
    const embeddings = { gen_ai_operation_name: 'embeddings', gen_ai_provider_name: 'openai', gen_ai_request_model: 'text-embedding-3-small' };
    expect(delta('gen_ai_client_token_usage_sum', { ...embeddings, gen_ai_token_type: 'input' })).toBe(emb.json.usage.input_tokens);
    expect(delta('gen_ai_client_operation_duration_seconds_count', embeddings)).toBe(1);
    expect(delta('gen_ai_client_token_usage_sum', { ...chat, gen_ai_token_type: 'output' })).toBe(proxied.json.usage.completion_tokens);
    expect(delta('gen_ai_client_operation_duration_seconds_count', chat)).toBe(1);
  });

  it('a failed provider attempt: duration with error_type, no token usage', async () => {
    const p = await h.project();
    const before = await scrape();
    const res = await h.call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('[[emulator:status=400]] broken'), routing: { provider: 'openai', model: 'gpt-4o-mini' } } });
    expect(res.json.status).toBe('failed');
    const after = await scrape();
    const delta = (name: string, want: Labels) => sample(after, name, want) - sample(before, name, want);
    expect(delta('gen_ai_client_operation_duration_seconds_count', { ...chat, error_type: '400' })).toBe(1);
    expect(delta('gen_ai_client_token_usage_count', chat)).toBe(0);
  });
});
