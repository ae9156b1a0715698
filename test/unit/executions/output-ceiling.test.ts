/** The worst case a dispatched call reserves: per target input bound, the ceiling × choices, the dearest target. */
import { outputCeilingSpec, withOutputCeiling } from '../../../src/executions/output-ceiling';
import type { ExecutionInput } from '../../../src/executions/types';
import { pricing } from '../../../src/pricing';
import { makeUsage } from '../../../src/providers/shared/usage';
import type { NormalizedRequest } from '../../../src/providers/types';

const text = 'héllo wörld '.repeat(20); // 280 UTF-8 bytes, far fewer o200k tokens
const cost = (provider: 'openai' | 'anthropic', model: string, input: number, output: number) =>
  pricing.costMicros(provider, model, makeUsage({ input_tokens: input, output_tokens: output }, true))!;

function spec(primary: { provider: 'openai' | 'anthropic'; model: string }, fallback: typeof primary[] = [], providerOptions?: ExecutionInput['request']['providerOptions']) {
  const request: NormalizedRequest = { operation: 'generate.text', provider: primary.provider, model: primary.model, stream: false, messages: [{ role: 'user', content: text }], parameters: { max_output_tokens: 500 } };
  const input = { request: { operation: 'generate.text' as const, messages: request.messages, parameters: request.parameters, providerOptions }, routing: { requested_provider: null, requested_model: null, reason_code: 'explicit_request' as const, primary, fallback } };
  return outputCeilingSpec(pricing, input, request, 30)!;
}

describe('outputCeilingSpec', () => {
  it('openai: the o200k count; others: the UTF-8 size plus per-message overhead bounds the input', () => {
    expect(spec({ provider: 'openai', model: 'gpt-4o-mini' }).costAt(100)).toBe(cost('openai', 'gpt-4o-mini', 30, 100));
    expect(spec({ provider: 'anthropic', model: 'claude-haiku-4-5' }).costAt(100)).toBe(cost('anthropic', 'claude-haiku-4-5', Buffer.byteLength(text) + 3, 100));
  });

  it('the dearest of primary and fallback, and n completions each up to the ceiling', () => {
    const s = spec({ provider: 'openai', model: 'gpt-4o-mini' }, [{ provider: 'anthropic', model: 'claude-opus-4-1' }]);
    expect(s.requested).toBe(500);
    expect(s.costAt(100)).toBe(cost('anthropic', 'claude-opus-4-1', Buffer.byteLength(text) + 3, 100));
    expect(spec({ provider: 'openai', model: 'gpt-4o-mini' }, [], { openai: { n: 4 } }).costAt(100)).toBe(cost('openai', 'gpt-4o-mini', 30, 400));
  });

  it('tool definitions are input: the UTF-8 size of their JSON is in the bound of a target with another tokenizer', () => {
    const tools = [{ name: 'lookup_order', description: 'Looks up an order by its number, in the shop\'s records', input_schema: { type: 'object', properties: { number: { type: 'string' } } } }];
    const request: NormalizedRequest = { operation: 'generate.text', provider: 'anthropic', model: 'claude-haiku-4-5', stream: false, messages: [{ role: 'user', content: text }], parameters: { max_output_tokens: 500 }, providerOptions: { tools } };
    const routing = { requested_provider: null, requested_model: null, reason_code: 'explicit_request' as const, primary: { provider: 'anthropic' as const, model: 'claude-haiku-4-5' }, fallback: [] };
    const s = outputCeilingSpec(pricing, { request: { operation: 'generate.text', messages: request.messages, parameters: request.parameters, providerOptions: { anthropic: { tools } } }, routing }, request, 30)!;
    expect(s.costAt(100)).toBe(cost('anthropic', 'claude-haiku-4-5', Buffer.byteLength(text) + 3 + Buffer.byteLength(JSON.stringify(tools)), 100));
  });

  it('deepseek-reasoner: its chain of thought, outside max_tokens, is in the worst case', () => {
    const request: NormalizedRequest = { operation: 'generate.text', provider: 'deepseek', model: 'deepseek-reasoner', stream: false, messages: [{ role: 'user', content: 'x' }] };
    const routing = { requested_provider: null, requested_model: null, reason_code: 'explicit_request' as const, primary: { provider: 'deepseek' as const, model: 'deepseek-reasoner' }, fallback: [] };
    // Counted 5 (o200k) against 4 bytes with overhead: the larger bounds it.
    const s = outputCeilingSpec(pricing, { request: { operation: 'generate.text', messages: request.messages }, routing }, request, 5)!;
    expect(s.costAt(100)).toBe(pricing.costMicros('deepseek', 'deepseek-reasoner', makeUsage({ input_tokens: 5, output_tokens: 100 + 32_768 }, true)));
  });

  it('an embedding has no output ceiling to fit; withOutputCeiling only changes what governance set', () => {
    const request: NormalizedRequest = { operation: 'embed.text', provider: 'openai', model: 'text-embedding-3-small', stream: false, inputs: [{ type: 'text', role: 'user', text: 'x' }] };
    const routing = { requested_provider: null, requested_model: null, reason_code: 'explicit_request' as const, primary: { provider: 'openai' as const, model: 'text-embedding-3-small' }, fallback: [] };
    expect(outputCeilingSpec(pricing, { request: { operation: 'embed.text', inputs: request.inputs }, routing }, request, 1)).toBeUndefined();
    const input = { request: { operation: 'generate.text' as const, parameters: { temperature: 0.2 } } };
    expect(withOutputCeiling(input, {})).toBe(input);
    expect(withOutputCeiling(input, { max_output_tokens: 77 }).request.parameters).toEqual({ temperature: 0.2, max_output_tokens: 77 });
  });
});
