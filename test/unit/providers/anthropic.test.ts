import { providerModules } from '../../../src/providers';
import { chatScenarios, noCtx, startHarness, textReq, type Harness } from './helpers';

const anthropic = providerModules.anthropic;
let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h.close(); });

describe('anthropic adapter', () => {
  it('separates system messages and defaults max_tokens', async () => {
    const call = await anthropic.buildRequest(
      textReq('anthropic', 'claude-haiku-4-5', 'hi', { messages: [{ role: 'system', content: 'a' }, { role: 'system', content: 'b' }, { role: 'user', content: 'hi' }], parameters: { temperature: 0.5 }, stream: true }),
      noCtx,
    );
    expect(call).toMatchObject({ path: '/v1/messages', headers: { 'anthropic-version': '2023-06-01' }, responseKind: 'sse' });
    expect(call.body).toEqual({ model: 'claude-haiku-4-5', system: 'a\n\nb', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1024, temperature: 0.5, stream: true });
    const withMax = await anthropic.buildRequest(textReq('anthropic', 'm', 'hi', { parameters: { max_output_tokens: 9 }, providerOptions: { max_tokens: 99, top_k: 5 } }), noCtx);
    expect(withMax.body).toMatchObject({ max_tokens: 9, top_k: 5 });
    expect(anthropic.authHeaders('k')).toEqual({ 'x-api-key': 'k' });
  });

  it('parses a message; input counts cache reads and writes; cached = cache_read', () => {
    const r = anthropic.parseResponse(textReq('anthropic', 'm', 'x'), {} as never, {
      id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-haiku-4-5', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn',
      usage: { input_tokens: 10, cache_creation_input_tokens: 5, cache_read_input_tokens: 20, output_tokens: 7 },
    }, 'application/json');
    expect(r.usage).toMatchObject({ input_tokens: 35, cached_input_tokens: 20, output_tokens: 7, total_tokens: 42, estimated: false });
    expect(r.finish_reason).toBe('end_turn');
  });

  it('extracts usage from native bodies and native streams; inspectable text', () => {
    expect(anthropic.extractUsageFromNative('/v1/messages', { usage: { input_tokens: 3, output_tokens: 2 } })).toMatchObject({ input_tokens: 3, output_tokens: 2 });
    const events = [
      { event: 'message_start', data: JSON.stringify({ type: 'message_start', message: { usage: { input_tokens: 11, output_tokens: 1, cache_read_input_tokens: 4 } } }) },
      { event: 'content_block_delta', data: JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'a' } }) },
      { event: 'message_delta', data: JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } }) },
      { event: 'message_stop', data: '{"type":"message_stop"}' },
    ];
    expect(anthropic.extractStreamUsage(events)).toMatchObject({ input_tokens: 15, cached_input_tokens: 4, output_tokens: 9 });
    expect(anthropic.inspectableText({ system: 's', messages: [{ role: 'user', content: [{ type: 'text', text: 't' }, { type: 'image' }] }] })).toEqual(['s', 't']);
  });

  it('maps 529 and overloaded_error to overloaded', () => {
    expect(anthropic.mapError(529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })).toMatchObject({ kind: 'overloaded', status: 529, retryable: true, message: 'Overloaded' });
  });
});

describe('anthropic through the gateway', () => {
  chatScenarios(() => h, 'anthropic', 'claude-haiku-4-5', { overloadedStatus: 529 });
});
