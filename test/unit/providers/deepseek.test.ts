import { providerModules } from '../../../src/providers';
import { chatScenarios, noCtx, startHarness, textReq, type Harness } from './helpers';

const deepseek = providerModules.deepseek;
let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

describe('deepseek adapter', () => {
  it('builds an OpenAI-shaped chat at /chat/completions with max_tokens', async () => {
    const call = await deepseek.buildRequest(textReq('deepseek', 'deepseek-chat', 'hi', { parameters: { max_output_tokens: 10 }, stream: true }), noCtx);
    expect(call.path).toBe('/chat/completions');
    expect(call.body).toEqual({ model: 'deepseek-chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10, stream: true, stream_options: { include_usage: true } });
  });
  it('reads prompt_cache_hit_tokens and reasoning tokens', () => {
    expect(deepseek.extractUsageFromNative('/chat/completions', { usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14, prompt_cache_hit_tokens: 6, prompt_cache_miss_tokens: 4, completion_tokens_details: { reasoning_tokens: 2 } } }))
      .toMatchObject({ input_tokens: 10, cached_input_tokens: 6, reasoning_tokens: 2 });
  });
  it('refuses embeddings', async () => {
    await expect(deepseek.buildRequest({ operation: 'embed.text', provider: 'deepseek', model: 'x', stream: false, messages: [{ role: 'user', content: 'a' }] }, noCtx)).rejects.toMatchObject({ failure: { status: 400 } });
  });
});

describe('deepseek through the gateway', () => {
  chatScenarios(() => h, 'deepseek', 'deepseek-chat');
});
