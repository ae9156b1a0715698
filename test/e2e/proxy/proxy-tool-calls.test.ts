/**
 * A tool call through each proxy and the OpenAI Responses API, as governance, usage and the
 * timeline see it: a native request that offers two tools and forces one, sent as each provider's
 * SDK would. The native answer carries the call; the permit keeps the tool names the request
 * offered (a policy's `match.tool` sees them); the timeline's provider.response_received names the
 * call (never its arguments); usage and cost are the provider's reported counts at the catalog's
 * prices.
 */
import { startHarness, Harness, patchPolicy } from '../executions/helpers';
import { pricing } from '../../../src/pricing';
import { makeUsage, type UsageCounts } from '../../../src/providers/shared/usage';
import { toolDefinitions, toolDefinitionTokens } from '../../../src/providers/shared/tool-definitions';
import type { ProviderId } from '../../../src/config';
import type { TestProject } from '../../support/tollgate';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.close());

const WEATHER = { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city', 'unit'] };
const TIME = { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] };
const OFFERED = ['get_time', 'get_weather'];
const ASK = 'What is the weather in Lisbon?';

/** One proxy: where its SDK sends the key and the request, the request forcing get_weather, and how to read its answer. */
interface Case {
  label: string;
  provider: ProviderId;
  model: string;
  path: string;
  auth: (key: string) => Record<string, string>;
  body: Record<string, unknown>;
  /** The tool calls' names and the finish reason of the native answer. */
  answer: (json: any) => { names: string[]; finish: string | null };
  /** The provider's reported usage as Tollgate counts it (Anthropic's input includes its cache tokens). */
  usage: (json: any) => UsageCounts;
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const openAIFunctions = [
  { type: 'function', function: { name: 'get_time', parameters: TIME } },
  { type: 'function', function: { name: 'get_weather', parameters: WEATHER } },
];
const responsesFunctions = [
  { type: 'function', name: 'get_time', parameters: TIME },
  { type: 'function', name: 'get_weather', parameters: WEATHER },
];
/** A Responses answer: its function_call output items; the record's finish reason is `stop` for a completed response. */
const responsesAnswer = (j: any) => ({ names: j.output.filter((o: any) => o.type === 'function_call').map((o: any) => o.name), finish: j.status === 'completed' ? 'stop' : 'length' });
const chatAnswer = (j: any) => ({ names: j.choices[0].message.tool_calls.map((c: any) => c.function.name), finish: j.choices[0].finish_reason });
const chatUsage = (j: any): UsageCounts => ({ input_tokens: j.usage.prompt_tokens, output_tokens: j.usage.completion_tokens, total_tokens: j.usage.total_tokens });
const chatCase = (provider: ProviderId, model: string, path: string): Case => ({
  label: `${provider} proxy`,
  provider,
  model,
  path,
  auth: bearer,
  body: { model, messages: [{ role: 'user', content: ASK }], tools: openAIFunctions, tool_choice: { type: 'function', function: { name: 'get_weather' } } },
  answer: chatAnswer,
  usage: chatUsage,
});

const CASES: Case[] = [
  chatCase('openai', 'gpt-4o-mini', '/openai/v1/chat/completions'),
  {
    label: 'openai proxy, Responses API',
    provider: 'openai',
    model: 'gpt-4o-mini',
    path: '/openai/v1/responses',
    auth: bearer,
    body: { model: 'gpt-4o-mini', input: ASK, tools: responsesFunctions, tool_choice: { type: 'function', name: 'get_weather' } },
    answer: responsesAnswer,
    usage: (j) => ({ input_tokens: j.usage.input_tokens, output_tokens: j.usage.output_tokens, total_tokens: j.usage.total_tokens }),
  },
  {
    label: 'anthropic proxy',
    provider: 'anthropic',
    model: 'claude-sonnet-4-5',
    path: '/anthropic/v1/messages',
    auth: (key) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' }),
    body: {
      model: 'claude-sonnet-4-5',
      max_tokens: 256,
      messages: [{ role: 'user', content: ASK }],
      tools: [{ name: 'get_time', input_schema: TIME }, { name: 'get_weather', input_schema: WEATHER }],
      tool_choice: { type: 'tool', name: 'get_weather' },
    },
    answer: (j) => ({ names: j.content.filter((c: any) => c.type === 'tool_use').map((c: any) => c.name), finish: j.stop_reason }),
    usage: (j) => ({ input_tokens: j.usage.input_tokens + j.usage.cache_creation_input_tokens + j.usage.cache_read_input_tokens, output_tokens: j.usage.output_tokens }),
  },
  {
    label: 'google proxy',
    provider: 'google',
    model: 'gemini-2.5-flash',
    path: '/google/v1beta/models/gemini-2.5-flash:generateContent',
    auth: (key) => ({ 'x-goog-api-key': key }),
    body: {
      contents: [{ role: 'user', parts: [{ text: ASK }] }],
      tools: [{ functionDeclarations: [{ name: 'get_time', parametersJsonSchema: TIME }, { name: 'get_weather', parametersJsonSchema: WEATHER }] }],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
    },
    answer: (j) => ({ names: j.candidates[0].content.parts.filter((p: any) => p.functionCall).map((p: any) => p.functionCall.name), finish: j.candidates[0].finishReason }),
    usage: (j) => ({ input_tokens: j.usageMetadata.promptTokenCount, output_tokens: j.usageMetadata.candidatesTokenCount, total_tokens: j.usageMetadata.totalTokenCount }),
  },
  chatCase('deepseek', 'deepseek-chat', '/deepseek/chat/completions'),
  chatCase('mistral', 'mistral-small-latest', '/mistral/v1/chat/completions'),
];

async function send(c: Case, p: TestProject, body: Record<string, unknown> = c.body) {
  const res = await fetch(`${h.tg.url}/v1/proxy${c.path}`, { method: 'POST', headers: { ...c.auth(p.clientKey), 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await res.json()) as any;
  return { status: res.status, json, requestId: res.headers.get('x-svc-request-id')!, permitId: res.headers.get('x-svc-permit-id')! };
}

async function timeline(p: TestProject, requestId: string): Promise<{ event_type: string; metadata: Record<string, any> }[]> {
  const res = await h.call('GET', `/v1/requests/${requestId}/timeline`, { key: p.clientKey });
  expect(res.status).toBe(200);
  return res.json.events;
}

const one = <T extends { event_type: string }>(events: T[], type: string): T => {
  const found = events.filter((e) => e.event_type === type);
  expect(found).toHaveLength(1);
  return found[0];
};

describe.each(CASES)('$label: a forced tool call', (c) => {
  it('the answer carries it; the permit, the timeline, usage and cost saw it', async () => {
    const p = await h.project();
    const res = await send(c, p);
    expect(res.status).toBe(200);
    const answer = c.answer(res.json);
    expect(answer.names).toEqual(['get_weather']);

    const events = await timeline(p, res.requestId);
    // Governance: the permit kept the tools the request offered, and its decision event names them.
    expect(one(events, 'permit.allowed').metadata).toMatchObject({ decision: 'allow', route: `proxy:${c.provider}`, tools: OFFERED });
    const permit = await h.call('GET', `/v1/permits/${res.permitId}`, { key: p.clientKey });
    expect(permit.json).toMatchObject({ decision: 'allow', request_id: res.requestId, tools: OFFERED });
    // The estimate the reservation was sized on counted the tool definitions as input.
    expect(permit.json.estimate.input_tokens).toBeGreaterThan(toolDefinitionTokens(toolDefinitions(c.body)));

    // The answer: its finish reason as the provider gave it, and the call by name only.
    const received = one(events, 'provider.response_received').metadata;
    expect(received).toEqual({ ok: true, status: 200, attempt: 1, finish_reason: answer.finish, tool_calls: ['get_weather'] });
    expect(JSON.stringify(events)).not.toContain('Lisbon');

    // Usage and cost: the provider's reported counts (the tool call's tokens), priced by the catalog.
    const counts = c.usage(res.json);
    expect(counts.output_tokens).toBeGreaterThan(0);
    const cost = pricing.costMicros(c.provider, c.model, makeUsage(counts));
    expect(cost).toBeGreaterThan(0);
    const usage = { input_tokens: counts.input_tokens, output_tokens: counts.output_tokens, cost_usd_micros: cost, estimated_final: false };
    expect(one(events, 'usage.recorded').metadata).toMatchObject(usage);
    const call = await h.call('GET', `/v1/calls/${res.requestId}`, { key: p.clientKey });
    expect(call.json).toMatchObject({ status: 'completed', route: 'proxy', provider: c.provider, usage });
    expect(permit.json.usage).toEqual({ input_tokens: counts.input_tokens, output_tokens: counts.output_tokens, cost_usd_micros: cost });
  });
});

describe('tool calls beyond the forced sync one', () => {
  const openai = CASES[0];

  it('a policy rule matching a tool denies a request that offers it, and lets a request without it pass', async () => {
    const p = await h.project();
    await patchPolicy(h, p, { deny_rules: [{ id: 'no-weather', match: { tool: 'get_weather' }, reason: 'Weather lookups are not allowed here' }] });
    const denied = await send(openai, p);
    expect(denied.status).toBe(403);
    expect(denied.json.error.message).toContain('Weather lookups are not allowed here');
    const permit = await h.call('GET', `/v1/permits/${denied.permitId}`, { key: p.clientKey });
    expect(permit.json).toMatchObject({ decision: 'deny', tools: OFFERED });
    expect(one(await timeline(p, denied.requestId), 'permit.denied').metadata).toMatchObject({ tools: OFFERED });

    const timeOnly = { ...openai.body, tools: [openAIFunctions[0]], tool_choice: 'required' };
    const allowed = await send(openai, p, timeOnly);
    expect(allowed.status).toBe(200);
    expect(chatAnswer(allowed.json).names).toEqual(['get_time']);
  });

  it('a streamed tool call without reported usage: the timeline names it, and the estimate counts its arguments', async () => {
    const p = await h.project();
    const res = await fetch(`${h.tg.url}/v1/proxy${openai.path}`, { method: 'POST', headers: { ...bearer(p.clientKey), 'content-type': 'application/json' }, body: JSON.stringify({ ...openai.body, stream: true }) });
    expect(res.status).toBe(200);
    const sse = await res.text();
    expect(sse).toContain('"name":"get_weather"');
    const events = await timeline(p, res.headers.get('x-svc-request-id')!);
    expect(one(events, 'provider.response_received').metadata).toMatchObject({ ok: true, finish_reason: 'tool_calls', tool_calls: ['get_weather'] });
    const usage = one(events, 'usage.recorded').metadata;
    // openai streams usage only when asked (stream_options.include_usage), so the output is estimated: the arguments' tokens.
    expect(usage.estimated_final).toBe(true);
    expect(usage.output_tokens).toBeGreaterThan(0);
  });

  it('the Responses API: a required tool_choice answers a function_call of the only tool offered; the permit and the timeline name it', async () => {
    const p = await h.project();
    const responses = CASES[1];
    const res = await send(responses, p, { ...responses.body, tools: [responsesFunctions[0]], tool_choice: 'required' });
    expect(res.status).toBe(200);
    const call = res.json.output.find((o: any) => o.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', name: 'get_time', status: 'completed', call_id: expect.any(String) });
    expect(Object.keys(JSON.parse(call.arguments))).toEqual(['zone']);
    const events = await timeline(p, res.requestId);
    expect(one(events, 'permit.allowed').metadata).toMatchObject({ tools: ['get_time'] });
    expect(one(events, 'provider.response_received').metadata).toEqual({ ok: true, status: 200, attempt: 1, finish_reason: 'stop', tool_calls: ['get_time'] });
  });

  it('the Responses API streamed: the function call arrives in its events; the timeline names it and usage is the provider\'s', async () => {
    const p = await h.project();
    const responses = CASES[1];
    const res = await fetch(`${h.tg.url}/v1/proxy${responses.path}`, { method: 'POST', headers: { ...bearer(p.clientKey), 'content-type': 'application/json' }, body: JSON.stringify({ ...responses.body, stream: true }) });
    expect(res.status).toBe(200);
    const sse = await res.text();
    expect(sse).toContain('response.function_call_arguments.delta');
    const completed = sse.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6))).find((e) => e.type === 'response.completed');
    expect(responsesAnswer(completed.response).names).toEqual(['get_weather']);
    const events = await timeline(p, res.headers.get('x-svc-request-id')!);
    expect(one(events, 'provider.response_received').metadata).toMatchObject({ ok: true, finish_reason: 'stop', tool_calls: ['get_weather'] });
    expect(one(events, 'usage.recorded').metadata).toMatchObject({ input_tokens: completed.response.usage.input_tokens, output_tokens: completed.response.usage.output_tokens, estimated_final: false });
  });
});
