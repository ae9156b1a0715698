import { executionRequestSchema, executeRequestSchema } from '../../../src/executions/schema';
import { planRouting, RoutingError } from '../../../src/executions/routing';
import { buildEnvelope, BuildEnvelopeInput } from '../../../src/executions/envelope';
import { resolveExecuteTarget, translateExecuteInput, ExecuteInputError } from '../../../src/executions/execute-input';
import { pricing } from '../../../src/pricing';

const msg = [{ role: 'user', content: 'hi' }];
const issues = (body: unknown) => {
  const r = executionRequestSchema.safeParse(body);
  return r.success ? [] : r.error.issues.map((i) => i.path.join('.'));
};

describe('execution request schema', () => {
  it('accepts a minimal request and every documented field', () => {
    expect(issues({ operation: 'generate.text', messages: msg })).toEqual([]);
    expect(
      issues({
        operation: 'generate.text',
        mode: 'sync',
        messages: [{ role: 'system', content: 's' }, ...msg],
        routing: { provider: 'openai', model: 'gpt-4o', allow_cross_provider_fallback: true, fallback_chain: [{ provider: 'anthropic', model: 'claude-haiku-4-5' }] },
        parameters: { max_output_tokens: 10, temperature: 0.2, top_p: 0.9 },
        provider_options: { openai: { seed: 1 } },
      }),
    ).toEqual([]);
  });
  it.each([
    [{ operation: 'generate.text' }, ''],
    [{ operation: 'generate.text', messages: msg, inputs: [{ type: 'text', text: 'x' }] }, ''],
    [{ operation: 'generate.text', messages: msg, project_id: 'x' }, 'project_id'],
    [{ operation: 'generate.text', messages: msg, context: {} }, 'context'],
    [{ operation: 'edit.image', messages: msg }, 'operation'],
    [{ operation: 'generate.text', messages: msg, provider_options: { nope: {} } }, 'provider_options.nope'],
    [{ operation: 'generate.text', messages: msg, provider_options: { openai: [] } }, 'provider_options.openai'],
    [{ operation: 'transcribe.audio', inputs: [{ type: 'image', asset: { source: 'url', url: 'http://a/b' } }] }, 'inputs'],
    [{ operation: 'understand.image', inputs: [{ type: 'text', text: 'x' }] }, 'inputs'],
    [{ operation: 'generate.text', inputs: [{ type: 'text' }] }, 'inputs.0.text'],
    [{ operation: 'generate.text', inputs: [{ type: 'image', text: 'x' }] }, 'inputs.0.asset'],
    [{ operation: 'generate.text', messages: msg, routing: { allow_cross_provider_fallback: true, fallback_chain: [] } }, 'routing.fallback_chain'],
    [{ operation: 'generate.text', messages: msg, routing: { fallback_chain: [{ provider: 'openai', model: 'gpt-4o' }] } }, 'routing.allow_cross_provider_fallback'],
    [{ operation: 'generate.text', messages: msg, routing: { allow_cross_provider_fallback: true, fallback_chain: [{ provider: 'mistral', model: 'm' }] } }, 'routing.fallback_chain.0.provider'],
    [{ operation: 'generate.image', mode: 'stream', messages: msg }, 'mode'],
    [{ operation: 'generate.text', messages: [{ role: 'tool', content: 'x' }] }, 'messages.0.role'],
  ])('rejects %j at %s', (body, path) => {
    expect(issues(body)).toContain(path);
  });
  it('/v1/execute schema', () => {
    expect(executeRequestSchema.safeParse({ model: 'gpt-4o', input: { messages: msg } }).success).toBe(true);
    expect(executeRequestSchema.safeParse({ model: 'gpt-4o' }).success).toBe(false);
    expect(executeRequestSchema.safeParse({ model: 'gpt-4o', input: { stream: true } }).success).toBe(false);
  });
});

describe('routing', () => {
  const plan = (routing?: Record<string, unknown>, operation = 'generate.text') => planRouting({ operation: operation as never, routing: routing as never }, pricing);
  it('explicit, provider-only, model-only, neither', () => {
    expect(plan({ provider: 'anthropic', model: 'claude-sonnet-4-5' })).toMatchObject({ primary: { provider: 'anthropic', model: 'claude-sonnet-4-5' }, reason_code: 'explicit_request' });
    expect(plan({ provider: 'mistral' })).toMatchObject({ primary: { provider: 'mistral', model: 'mistral-small-latest' }, reason_code: 'default_model_for_provider' });
    expect(plan({ model: 'gemini-2.5-pro' })).toMatchObject({ primary: { provider: 'google', model: 'gemini-2.5-pro' }, reason_code: 'provider_inferred_from_model' });
    expect(plan({ model: 'claude-haiku' })).toMatchObject({ primary: { provider: 'anthropic', model: 'claude-haiku-4-5' } });
    expect(plan(undefined)).toMatchObject({ primary: { provider: 'openai', model: 'gpt-4o-mini' }, reason_code: 'operation_default', requested_provider: null, requested_model: null });
    expect(plan(undefined, 'transcribe.audio')).toMatchObject({ primary: { provider: 'openai', model: 'whisper-1' } });
  });
  it('rejects targets outside the matrix and unknown models', () => {
    expect(() => plan({ provider: 'deepseek' }, 'embed.text')).toThrow(RoutingError);
    expect(() => plan({ provider: 'anthropic', model: 'claude-haiku-4-5' }, 'understand.image')).toThrow(RoutingError);
    expect(() => plan({ model: 'unknown-model' })).toThrow(RoutingError);
  });
  it('fallback chain only from openai/anthropic primaries; the primary is not repeated', () => {
    const chain = { allow_cross_provider_fallback: true, fallback_chain: [{ provider: 'openai', model: 'gpt-4o-mini' }, { provider: 'anthropic', model: 'claude-haiku-4-5' }] };
    expect(plan({ provider: 'openai', model: 'gpt-4o-mini', ...chain }).fallback).toEqual([{ provider: 'anthropic', model: 'claude-haiku-4-5' }]);
    expect(() => plan({ provider: 'google', ...chain })).toThrow(RoutingError);
    expect(plan({ provider: 'openai' }).fallback).toEqual([]);
  });
});

describe('envelope', () => {
  const base: BuildEnvelopeInput = {
    id: 'exec_req_1',
    route: 'executions',
    createdAt: '2025-01-01T00:00:00.000Z',
    completedAt: '2025-01-01T00:00:00.250Z',
    status: 'completed',
    statusCode: 200,
    output: { content: [{ type: 'text', role: 'assistant', text: 'ok' }] },
    outputAssets: [],
    routing: { requested_provider: null, requested_model: null, selected_provider: 'openai', selected_model: 'gpt-4o-mini', reason_code: 'operation_default', fallback_occurred: false },
    governance: { decision: 'allow', reason: 'policy.active_policy_candidate', actions: [], constraints: null, budgets: null },
    usage: { input_tokens: 3, output_tokens: 4, total_tokens: 7, metrics: [{ meter: 'input_tokens', quantity: 3, unit: 'tokens' }], estimated: false },
    costMicros: 12,
    error: null,
  };
  it('has exactly the spec fields', () => {
    const env = buildEnvelope(base);
    expect(Object.keys(env).sort()).toEqual(['created_at', 'error', 'governance', 'id', 'object', 'output', 'output_assets', 'routing', 'status', 'status_code', 'timing', 'usage']);
    expect(env.timing).toEqual({ started_at: '2025-01-01T00:00:00.000Z', completed_at: '2025-01-01T00:00:00.250Z', duration_ms: 250 });
    expect(env.usage).toEqual({ input_tokens: 3, output_tokens: 4, total_tokens: 7, cost_usd_micros: 12, estimated_final: false, metrics: [{ meter: 'input_tokens', quantity: 3, unit: 'tokens' }] });
  });
  it('denied: zero usage, empty metrics, null output, error kept', () => {
    const env = buildEnvelope({ ...base, status: 'denied', statusCode: 403, error: { code: 'denied', message: 'no' } });
    expect(env.usage).toEqual({ input_tokens: 0, output_tokens: 0, total_tokens: 0, cost_usd_micros: 0, estimated_final: false, metrics: [] });
    expect(env.output).toBeNull();
    expect(env.error).toEqual({ code: 'denied', message: 'no' });
  });
  it('failed keeps partial usage; /v1/execute has resolved and no metrics', () => {
    const failed = buildEnvelope({ ...base, status: 'failed', statusCode: 502, error: { code: 'upstream_error', message: 'x' } });
    expect(failed.usage.input_tokens).toBe(3);
    expect(failed.output).toBeNull();
    const ex = buildEnvelope({ ...base, route: 'execute', resolved: { provider: 'openai', model: 'gpt-4o-mini', alias: null } });
    expect(ex.usage.metrics).toBeUndefined();
    expect(ex.resolved).toEqual({ provider: 'openai', model: 'gpt-4o-mini', alias: null });
  });
});

describe('/v1/execute resolution and translation', () => {
  it('resolves provider from model or alias; ambiguous/unknown → error', () => {
    expect(resolveExecuteTarget({ model: 'gpt-mini' }, pricing)).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini', alias: 'gpt-mini' });
    expect(() => resolveExecuteTarget({ model: 'nope' }, pricing)).toThrow(ExecuteInputError);
    expect(resolveExecuteTarget({ provider: 'openai', model: 'my-finetune' }, pricing)).toMatchObject({ provider: 'openai', model: 'my-finetune', alias: null });
  });
  it('infers the operation from the payload', () => {
    expect(translateExecuteInput('openai', 'gpt-4o', { messages: msg, max_tokens: 5, seed: 3 })).toEqual({
      operation: 'generate.text',
      messages: [{ role: 'user', content: 'hi' }],
      parameters: { max_output_tokens: 5 },
      providerOptions: { openai: { seed: 3 } },
    });
    expect(translateExecuteInput('openai', 'gpt-4o', { messages: [{ role: 'user', content: [{ type: 'text', text: 'what' }, { type: 'image_url', image_url: { url: 'http://x/y.png' } }] }] }).operation).toBe('understand.image');
    expect(translateExecuteInput('openai', 'text-embedding-3-small', { input: 'x' }).operation).toBe('embed.text');
    expect(translateExecuteInput('openai', 'gpt-image-1', { prompt: 'cat' }).operation).toBe('generate.image');
    expect(translateExecuteInput('openai', 'tts-1', { input: 'say', voice: 'alloy' }).operation).toBe('generate.audio');
    expect(translateExecuteInput('anthropic', 'claude-haiku-4-5', { system: 's', messages: msg, max_tokens: 9 })).toMatchObject({ operation: 'generate.text', messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'hi' }], parameters: { max_output_tokens: 9 } });
    expect(translateExecuteInput('google', 'gemini-2.5-flash', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { maxOutputTokens: 7 } })).toMatchObject({ operation: 'generate.text', parameters: { max_output_tokens: 7 } });
    expect(translateExecuteInput('google', 'gemini-embedding-001', { content: { parts: [{ text: 'e' }] } }).operation).toBe('embed.text');
    expect(() => translateExecuteInput('deepseek', 'deepseek-chat', { input: 'x' })).toThrow(ExecuteInputError);
    expect(() => translateExecuteInput('openai', 'gpt-4o', { foo: 1 })).toThrow(ExecuteInputError);
  });
});
