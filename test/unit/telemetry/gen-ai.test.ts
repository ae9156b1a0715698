/** The GenAI convention names Tollgate emits (src/telemetry/gen-ai.ts). */
import { Registry } from 'prom-client';
import { PROVIDER_IDS } from '../../../src/config';
import { OPERATIONS } from '../../../src/providers/types';
import { createGenAiMetrics, genAiErrorType, genAiOperationName, genAiOutcomeAttributes, genAiProviderName } from '../../../src/telemetry/gen-ai';

describe('GenAI semantic conventions', () => {
  it('maps every provider to its well-known gen_ai.provider.name', () => {
    expect(PROVIDER_IDS.map(genAiProviderName)).toEqual(['openai', 'anthropic', 'gcp.gemini', 'deepseek', 'mistral_ai']);
  });

  it('maps every operation to a gen_ai.operation.name, well-known where one fits', () => {
    expect(Object.fromEntries(OPERATIONS.map((o) => [o, genAiOperationName(o, 'openai')]))).toEqual({
      'generate.text': 'chat',
      'embed.text': 'embeddings',
      'understand.image': 'chat',
      'generate.image': 'generate_image',
      'generate.audio': 'generate_audio',
      'transcribe.audio': 'transcribe_audio',
    });
    expect(genAiOperationName('generate.text', 'google')).toBe('generate_content');
    expect(genAiOperationName('embed.text', 'google')).toBe('embeddings');
  });

  it('error.type: the HTTP status of a plain HTTP error, else the failure kind', () => {
    expect(genAiErrorType({ kind: 'http_error', status: 404 })).toBe('404');
    expect(genAiErrorType({ kind: 'http_error', status: null })).toBe('http_error');
    expect(genAiErrorType({ kind: 'rate_limited', status: 429 })).toBe('rate_limited');
    expect(genAiOutcomeAttributes({ errorType: 'TypeError' })).toEqual({ 'error.type': 'TypeError' });
    expect(genAiOutcomeAttributes({ usage: { input_tokens: 3, output_tokens: 5 }, responseModel: 'm-1' })).toEqual({
      'gen_ai.response.model': 'm-1',
      'gen_ai.usage.input_tokens': 3,
      'gen_ai.usage.output_tokens': 5,
    });
  });

  it('the client metrics: token usage per type only with usage, duration with error_type on failure', async () => {
    const registry = new Registry();
    const m = createGenAiMetrics(registry);
    const call = { operation: 'generate.text' as const, provider: 'mistral' as const, model: 'mistral-small' };
    m.observe(call, 0.5, { usage: { input_tokens: 10, output_tokens: 2 }, responseModel: 'mistral-small-2501' });
    m.observe(call, 0.1, { failure: { kind: 'timeout', status: null } });
    const text = await registry.metrics();
    const base = 'gen_ai_operation_name="chat",gen_ai_provider_name="mistral_ai",gen_ai_request_model="mistral-small"';
    expect(text).toContain(`gen_ai_client_token_usage_sum{${base},gen_ai_response_model="mistral-small-2501",gen_ai_token_type="input"} 10`);
    expect(text).toContain(`gen_ai_client_token_usage_sum{${base},gen_ai_response_model="mistral-small-2501",gen_ai_token_type="output"} 2`);
    expect(text).toContain(`gen_ai_client_operation_duration_seconds_count{${base},error_type="timeout"} 1`);
    expect(text).toContain(`gen_ai_client_operation_duration_seconds_count{${base},gen_ai_response_model="mistral-small-2501"} 1`);
    expect(text).not.toMatch(/gen_ai_client_token_usage_count\{[^}]*error_type/);
  });
});
