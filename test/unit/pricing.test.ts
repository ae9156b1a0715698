import { PRICING_TABLE_ID, pricing, computeCostMicros, priceOf } from '../../src/pricing';
import { makeUsage } from '../../src/providers/shared/usage';
import { countChatTokens } from '../../src/pricing/tokenizer';

describe('pricing', () => {
  it('has a versioned table id', () => {
    expect(PRICING_TABLE_ID).toMatch(/^pricing_\d{4}_\d{2}_\d{2}$/);
    expect(pricing.pricingTableId).toBe(PRICING_TABLE_ID);
  });

  it('costs tokens in integer micro-USD, rounded up once per call', () => {
    // gpt-4o-mini: 150_000 in / 600_000 out micro-USD per 1M tokens → 1000 in = 150, 500 out = 300.
    expect(pricing.costMicros('openai', 'gpt-4o-mini', makeUsage({ input_tokens: 1000, output_tokens: 500 }))).toBe(450);
    // 1 input token = 0.15 micro-USD → rounds up to 1.
    expect(pricing.costMicros('openai', 'gpt-4o-mini', makeUsage({ input_tokens: 1, output_tokens: 0 }))).toBe(1);
    // 5 in + 5 out = 0.75 + 3 = 3.75 → 4.
    expect(pricing.costMicros('openai', 'gpt-4o-mini', makeUsage({ input_tokens: 5, output_tokens: 5 }))).toBe(4);
    // Single rounding: 2 in + 1 out on gpt-4o-mini = 0.3 + 0.6 = 0.9 → 1 (per-meter ceil would give 2).
    expect(pricing.costMicros('openai', 'gpt-4o-mini', makeUsage({ input_tokens: 2, output_tokens: 1 }))).toBe(1);
    expect(pricing.costMicros('openai', 'gpt-4o-mini', makeUsage({ input_tokens: 0, output_tokens: 0 }))).toBe(0);
    const big = pricing.costMicros('anthropic', 'claude-opus-4-1', makeUsage({ input_tokens: 10_000_000, output_tokens: 3_000_000 }));
    expect(big).toBe(150_000_000 + 225_000_000);
    expect(Number.isInteger(big)).toBe(true);
  });

  it('prices cached input tokens at the cached rate (and at the input rate when none is listed)', () => {
    // gpt-4o: 2.5 / 1.25 / 10 USD per 1M. 1M input of which 400k cached: 600k × 2.5 + 400k × 1.25 = 1.5 + 0.5 USD.
    expect(pricing.costMicros('openai', 'gpt-4o', makeUsage({ input_tokens: 1_000_000, cached_input_tokens: 400_000, output_tokens: 0 }))).toBe(2_000_000);
    // anthropic sonnet: cached at 0.30 vs 3.00.
    expect(pricing.costMicros('anthropic', 'claude-sonnet-4-5', makeUsage({ input_tokens: 1000, cached_input_tokens: 1000, output_tokens: 0 }))).toBe(300);
    // deepseek: cache hit 0.028 vs 0.28.
    expect(pricing.costMicros('deepseek', 'deepseek-chat', makeUsage({ input_tokens: 1000, cached_input_tokens: 500, output_tokens: 0 }))).toBe(154);
    // mistral has no cached price: cached tokens cost the input price.
    expect(pricing.costMicros('mistral', 'mistral-small-latest', makeUsage({ input_tokens: 1000, cached_input_tokens: 1000 }))).toBe(100);
  });

  it('prices images, audio seconds and characters', () => {
    expect(pricing.costMicros('openai', 'dall-e-3', makeUsage({ images: 2 }))).toBe(80_000);
    expect(pricing.costMicros('openai', 'tts-1', makeUsage({ characters: 1000 }))).toBe(15_000);
    expect(pricing.costMicros('openai', 'whisper-1', makeUsage({ audio_seconds: 60 }))).toBe(6_000);
    expect(pricing.costMicros('openai', 'whisper-1', makeUsage({ audio_seconds: 1.0001 }))).toBe(101);
    expect(pricing.costMicros('openai', 'gpt-image-1', makeUsage({ input_tokens: 10, images: 1 }))).toBe(42_050);
  });

  it('returns null for an unknown model, and prices dated snapshots as their base model', () => {
    expect(pricing.costMicros('openai', 'gpt-unknown', makeUsage({ input_tokens: 1 }))).toBeNull();
    expect(pricing.costMicros('anthropic', 'gpt-4o', makeUsage({ input_tokens: 1 }))).toBeNull();
    expect(computeCostMicros(null, makeUsage({}))).toBeNull();
    expect(priceOf('anthropic', 'claude-sonnet-4-5-20250929')).toEqual(priceOf('anthropic', 'claude-sonnet-4-5'));
    expect(priceOf('openai', 'gpt-4o-2024-08-06')).toEqual(priceOf('openai', 'gpt-4o'));
    expect(priceOf('google', 'models/gemini-2.5-flash')).toEqual(priceOf('google', 'gemini-2.5-flash'));
  });

  it('resolves aliases and models', () => {
    expect(pricing.resolveModel('claude-sonnet')).toEqual({ provider: 'anthropic', model: 'claude-sonnet-4-5', alias: 'claude-sonnet' });
    expect(pricing.resolveModel('gpt-4o-latest')).toEqual({ provider: 'openai', model: 'gpt-4o', alias: 'gpt-4o-latest' });
    expect(pricing.resolveModel('claude-sonnet', 'openai')).toBeNull();
    expect(pricing.resolveModel('gpt-4o-mini')).toEqual({ provider: 'openai', model: 'gpt-4o-mini', alias: null });
    expect(pricing.resolveModel('deepseek-chat', 'deepseek')).toEqual({ provider: 'deepseek', model: 'deepseek-chat', alias: null });
    // Names of Object.prototype members are unknown models, not aliases (a fuzzed intent found this).
    for (const name of ['valueOf', 'constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      expect(pricing.resolveModel(name)).toBeNull();
      expect(pricing.costMicros('openai', name, makeUsage({ input_tokens: 10, output_tokens: 10 }))).toBeNull();
    }
    expect(pricing.resolveModel('nope')).toBeNull();
    expect(pricing.costMicros('anthropic', 'claude-sonnet', makeUsage({ input_tokens: 1000 }))).toBe(3000);
  });

  it('has default targets per operation and provider', () => {
    expect(pricing.defaultTarget('generate.text')).toEqual({ provider: 'openai', model: 'gpt-4o-mini' });
    expect(pricing.defaultTarget('generate.text', 'anthropic')).toEqual({ provider: 'anthropic', model: 'claude-haiku-4-5' });
    expect(pricing.defaultTarget('embed.text', 'mistral')).toEqual({ provider: 'mistral', model: 'mistral-embed' });
    expect(pricing.defaultTarget('transcribe.audio', 'google')).toEqual({ provider: 'google', model: 'gemini-2.5-flash' });
    expect(pricing.defaultTarget('generate.image', 'anthropic')).toBeNull();
    for (const op of ['generate.text', 'embed.text', 'understand.image', 'generate.image', 'generate.audio', 'transcribe.audio'] as const) {
      const t = pricing.defaultTarget(op)!;
      expect(priceOf(t.provider, t.model)).not.toBeNull();
    }
  });

  it('estimates input with the tokenizer and output from max_output_tokens or the default', () => {
    const req = { operation: 'generate.text' as const, provider: 'openai' as const, model: 'gpt-4o-mini', stream: false, messages: [{ role: 'user' as const, content: 'hello world' }] };
    const e = pricing.estimate(req);
    expect(e).toEqual({ input_tokens: countChatTokens(['hello world']), output_tokens: 1024, cost_micros: expect.any(Number), tokenizer: 'o200k_base' });
    expect(e.cost_micros).toBe(pricing.costMicros('openai', 'gpt-4o-mini', makeUsage({ input_tokens: e.input_tokens, output_tokens: 1024 })));
    expect(pricing.estimate({ ...req, parameters: { max_output_tokens: 10 } }).output_tokens).toBe(10);
    expect(pricing.estimate({ ...req, model: 'mystery' }).cost_micros).toBeNull();
    expect(pricing.estimate({ ...req, operation: 'generate.audio', model: 'tts-1' }).cost_micros).toBe(11 * 15);
    expect(pricing.estimate({ ...req, operation: 'transcribe.audio', model: 'whisper-1', messages: undefined, inputs: [{ type: 'audio', asset: { source: 'url', url: 'u' } }] }).cost_micros).toBe(6000);
  });
});
