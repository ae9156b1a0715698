/**
 * What each provider module reads of tools from native bodies: the tools a request offers (for
 * governance), and the finish reason and tool calls of an answer, whole or streamed (for the record).
 */
import { providerModules } from '../../../src/providers';
import type { SseEvent } from '../../../src/providers';
import type { NormalizedRequest } from '../../../src/providers/types';

const REQ: NormalizedRequest = { operation: 'generate.text', provider: 'openai', model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true };
const data = (...objs: unknown[]): SseEvent[] => objs.map((o) => ({ data: typeof o === 'string' ? o : JSON.stringify(o) }));
const streamed = (provider: keyof typeof providerModules, events: SseEvent[]) => {
  const parser = providerModules[provider].createStreamParser({ ...REQ, provider });
  for (const ev of events) parser.push(ev);
  return parser.snapshot();
};

describe('the tools a request offers', () => {
  it('openai-shaped chat: functions and custom tools by name, the older `functions` too, each once', () => {
    const body = {
      messages: [],
      tools: [{ type: 'function', function: { name: 'get_weather' } }, { type: 'custom', custom: { name: 'sql' } }, { type: 'function', function: { name: 'get_weather' } }],
      functions: [{ name: 'legacy' }],
    };
    for (const p of ['openai', 'deepseek', 'mistral'] as const) expect(providerModules[p].requestTools(body)).toEqual(['get_weather', 'sql', 'legacy']);
    expect(providerModules.openai.requestTools({ messages: [] })).toEqual([]);
  });

  it('the Responses API: functions by name, built-in tools by type', () => {
    expect(providerModules.openai.requestTools({ input: 'hi', tools: [{ type: 'function', name: 'get_weather' }, { type: 'web_search' }] })).toEqual(['get_weather', 'web_search']);
  });

  it('anthropic: client and server tools by name', () => {
    expect(providerModules.anthropic.requestTools({ tools: [{ name: 'get_weather', input_schema: {} }, { type: 'web_search_20250305', name: 'web_search' }] })).toEqual(['get_weather', 'web_search']);
  });

  it('google: declared functions by name, built-in tools by key', () => {
    const body = { tools: [{ functionDeclarations: [{ name: 'get_time' }, { name: 'get_weather' }] }, { googleSearch: {} }, { function_declarations: [{ name: 'snake' }] }] };
    expect(providerModules.google.requestTools(body)).toEqual(['get_time', 'get_weather', 'googleSearch', 'snake']);
  });
});

describe('the tool calls of an answer', () => {
  it('openai-shaped chat: every call by name with its arguments, and the finish reason; not an embeddings body', () => {
    const body = { choices: [{ finish_reason: 'tool_calls', message: { tool_calls: [{ type: 'function', function: { name: 'a', arguments: '{"x":1}' } }, { type: 'function', function: { name: 'b', arguments: '{}' } }] } }] };
    for (const [p, path] of [['openai', '/v1/chat/completions'], ['deepseek', '/chat/completions'], ['mistral', '/v1/chat/completions']] as const) {
      expect(providerModules[p].answerOfNative(path, body)).toEqual({ finish_reason: 'tool_calls', tool_calls: [{ name: 'a', arguments: '{"x":1}' }, { name: 'b', arguments: '{}' }] });
    }
    expect(providerModules.openai.answerOfNative('/v1/embeddings', { data: [] })).toBeNull();
  });

  it('openai chat stream: the name from the first piece, the arguments from all of them, per index', () => {
    const chunk = (delta: unknown, finish: string | null = null) => ({ choices: [{ index: 0, delta, finish_reason: finish }] });
    const snap = streamed('openai', data(
      chunk({ tool_calls: [{ index: 0, id: 'c1', function: { name: 'a', arguments: '' } }, { index: 1, id: 'c2', function: { name: 'b', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"x"' } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: '{}' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }),
      chunk({}, 'tool_calls'),
      '[DONE]',
    ));
    expect(snap).toMatchObject({ done: true, finish_reason: 'tool_calls', tool_calls: [{ name: 'a', arguments: '{"x":1}' }, { name: 'b', arguments: '{}' }] });
  });

  it('the Responses API: function calls and built-in tool calls among the output items, whole or streamed', () => {
    const response = { object: 'response', status: 'completed', output: [{ type: 'function_call', name: 'a', arguments: '{}' }, { type: 'web_search_call', id: 'ws' }, { type: 'message', content: [] }] };
    const calls = [{ name: 'a', arguments: '{}' }, { name: 'web_search_call', arguments: '' }];
    expect(providerModules.openai.answerOfNative('/v1/responses', response)).toEqual({ finish_reason: 'stop', tool_calls: calls });
    const snap = streamed('openai', data(
      { type: 'response.created', response: { model: 'm' } },
      { type: 'response.output_item.added', output_index: 0, item: { type: 'function_call', name: 'a', arguments: '' } },
      { type: 'response.function_call_arguments.delta', output_index: 0, delta: '{' },
      { type: 'response.function_call_arguments.delta', output_index: 0, delta: '}' },
    ));
    expect(snap.tool_calls).toEqual([{ name: 'a', arguments: '{}' }]);
    const done = streamed('openai', data({ type: 'response.created', response: { model: 'm' } }, { type: 'response.completed', response: { ...response, usage: { input_tokens: 1, output_tokens: 2 } } }));
    expect(done).toMatchObject({ done: true, finish_reason: 'stop', tool_calls: calls });
  });

  it('anthropic: tool_use blocks (server tools too), whole or as input_json_delta pieces', () => {
    const body = { type: 'message', stop_reason: 'tool_use', content: [{ type: 'text', text: 'calling' }, { type: 'tool_use', name: 'a', input: { x: 1 } }, { type: 'server_tool_use', name: 'web_search', input: {} }] };
    expect(providerModules.anthropic.answerOfNative('/v1/messages', body)).toEqual({ finish_reason: 'tool_use', tool_calls: [{ name: 'a', arguments: '{"x":1}' }, { name: 'web_search', arguments: '{}' }] });
    const snap = streamed('anthropic', data(
      { type: 'message_start', message: { model: 'm', usage: { input_tokens: 3, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', name: 'a', input: {} } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"x"' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: ':1}' } },
      { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 5 } },
      { type: 'message_stop' },
    ));
    expect(snap).toMatchObject({ done: true, finish_reason: 'tool_use', tool_calls: [{ name: 'a', arguments: '{"x":1}' }] });
  });

  it('google: functionCall parts of the first candidate, whole or in a stream chunk; not an embedding', () => {
    const body = { candidates: [{ finishReason: 'STOP', content: { parts: [{ functionCall: { name: 'a', args: { x: 1 } } }] } }] };
    expect(providerModules.google.answerOfNative('/v1beta/models/g:generateContent', body)).toEqual({ finish_reason: 'STOP', tool_calls: [{ name: 'a', arguments: '{"x":1}' }] });
    expect(providerModules.google.answerOfNative('/v1beta/models/g:embedContent', { embedding: { values: [] } })).toBeNull();
    expect(streamed('google', data(body)).tool_calls).toEqual([{ name: 'a', arguments: '{"x":1}' }]);
  });
});
