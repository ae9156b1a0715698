/**
 * The emulator charges tool definitions as input, as providers do: the same request with tools
 * reports exactly the definitions' tokens (Tollgate's own estimate of them) more input than without.
 */
import { startEmulator, type EmulatorHandle } from '../../../emulator/server';
import { toolDefinitions, toolDefinitionTokens } from '../../../src/providers/shared/tool-definitions';

const schema = { type: 'object', properties: { city: { type: 'string', description: 'The city whose weather to look up, in English' } }, required: ['city'] };

interface Case {
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  tools: Record<string, unknown>;
  input: (json: any) => number;
}

const cases: [string, Case][] = [
  ['openai chat', { path: '/openai/v1/chat/completions', headers: { authorization: 'Bearer k' }, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Weather in Oslo?' }] }, tools: { tools: [{ type: 'function', function: { name: 'get_weather', description: 'Current weather', parameters: schema } }], tool_choice: 'none' }, input: (j) => j.usage.prompt_tokens }],
  ['openai responses', { path: '/openai/v1/responses', headers: { authorization: 'Bearer k' }, body: { model: 'gpt-4o-mini', input: 'Weather in Oslo?' }, tools: { tools: [{ type: 'function', name: 'get_weather', description: 'Current weather', parameters: schema }], tool_choice: 'none' }, input: (j) => j.usage.input_tokens }],
  ['mistral', { path: '/mistral/v1/chat/completions', headers: { authorization: 'Bearer k' }, body: { model: 'mistral-small-latest', messages: [{ role: 'user', content: 'Weather in Oslo?' }] }, tools: { tools: [{ type: 'function', function: { name: 'get_weather', description: 'Current weather', parameters: schema } }], tool_choice: 'none' }, input: (j) => j.usage.prompt_tokens }],
  ['anthropic', { path: '/anthropic/v1/messages', headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }, body: { model: 'claude-haiku-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'Weather in Oslo?' }] }, tools: { tools: [{ name: 'get_weather', description: 'Current weather', input_schema: schema }], tool_choice: { type: 'none' } }, input: (j) => j.usage.input_tokens }],
  ['google', { path: '/google/v1beta/models/gemini-2.5-flash:generateContent', headers: { 'x-goog-api-key': 'k' }, body: { contents: [{ role: 'user', parts: [{ text: 'Weather in Oslo?' }] }] }, tools: { tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'Current weather', parameters: schema }] }], toolConfig: { functionCallingConfig: { mode: 'NONE' } } }, input: (j) => j.usageMetadata.promptTokenCount }],
];

describe('emulator usage counts tool definitions as input', () => {
  let emu: EmulatorHandle;
  beforeAll(async () => {
    emu = await startEmulator();
  });
  afterAll(() => emu.close());

  const post = async (c: Case, body: Record<string, unknown>) => {
    const res = await fetch(`${emu.url}${c.path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...c.headers }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    return c.input(await res.json());
  };

  it.each(cases)('%s', async (_name, c) => {
    const without = await post(c, c.body);
    const withTools = await post(c, { ...c.body, ...c.tools });
    const expected = toolDefinitionTokens(toolDefinitions(c.tools));
    expect(expected).toBeGreaterThan(10);
    expect(withTools - without).toBe(expected);
  });
});
