/**
 * What agents send, through the proxies with the official SDKs: structured output (a JSON schema the
 * answer must follow) and tools (forced and automatic, a two-step tool loop, streamed tool-call
 * deltas). The emulator answers deterministically (emulator/structured.ts); each answer must
 * validate against the schema the request gave, and each call is governed and recorded like any other.
 */
import Ajv from 'ajv';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI, Type } from '@google/genai';
import { startHarness, Harness } from '../executions/helpers';
import type { TestProject } from '../../support/tollgate';

let h: Harness;
let p: TestProject;
let base: string;
beforeAll(async () => {
  h = await startHarness();
  p = await h.project();
  base = `${h.tg.url}/v1/proxy`;
});
afterAll(async () => h?.close());

const ajv = new Ajv({ strict: false });
const validates = (schema: object, value: unknown) => {
  const ok = ajv.validate(schema, value);
  if (!ok) throw new Error(`${JSON.stringify(value)} does not validate: ${ajv.errorsText()}`);
  return ok;
};

const WEATHER = {
  type: 'object',
  properties: {
    city: { type: 'string', minLength: 2 },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer', minimum: 1, maximum: 7 },
  },
  required: ['city', 'unit', 'days'],
  additionalProperties: false,
} as const;

const ANSWER = {
  type: 'object',
  properties: {
    title: { type: 'string' },
    tags: { type: 'array', items: { type: 'string' }, minItems: 1 },
    score: { type: 'number', minimum: 0, maximum: 10 },
    draft: { type: 'boolean' },
    author: { anyOf: [{ type: 'null' }, { $ref: '#/$defs/person' }] },
  },
  required: ['title', 'tags', 'score', 'draft', 'author'],
  additionalProperties: false,
  $defs: { person: { type: 'object', properties: { name: { type: 'string' }, email: { type: 'string', format: 'email' } }, required: ['name', 'email'], additionalProperties: false } },
} as const;

async function call(requestId: string): Promise<any> {
  for (let i = 0; i < 40; i++) {
    const res = await h.call('GET', `/v1/calls/${requestId}`, { key: p.clientKey });
    if (res.status === 200) return res.json;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`call ${requestId} was not recorded`);
}

describe('openai-shaped proxies', () => {
  const openai = () => new OpenAI({ apiKey: p.clientKey, baseURL: `${base}/openai/v1`, maxRetries: 0 });
  const deepseek = () => new OpenAI({ apiKey: p.clientKey, baseURL: `${base}/deepseek`, maxRetries: 0 });
  const mistral = () => new OpenAI({ apiKey: p.clientKey, baseURL: `${base}/mistral/v1`, maxRetries: 0 });

  it('response_format json_schema (strict): the answer validates, and is governed and recorded', async () => {
    const { data: r, response } = await openai()
      .chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Summarise the release notes as JSON' }],
        response_format: { type: 'json_schema', json_schema: { name: 'answer', strict: true, schema: ANSWER } },
      })
      .withResponse();
    const value = JSON.parse(r.choices[0].message.content!);
    validates(ANSWER, value);
    expect(r.choices[0].finish_reason).toBe('stop');
    const recorded = await call(response.headers.get('x-svc-request-id')!);
    expect(recorded).toMatchObject({ status: 'completed', route: 'proxy', provider: 'openai', usage: { output_tokens: r.usage!.completion_tokens } });
    expect(recorded.usage.output_tokens).toBeGreaterThan(0);
  });

  it('response_format json_object answers a JSON object', async () => {
    const r = await openai().chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'JSON please' }], response_format: { type: 'json_object' } });
    expect(typeof JSON.parse(r.choices[0].message.content!)).toBe('object');
  });

  it.each([
    ['openai', 'gpt-4o-mini'],
    ['deepseek', 'deepseek-chat'],
    ['mistral', 'mistral-small-latest'],
  ])('%s: a forced tool call validates against its parameters; after its result, an answer (a two-step loop)', async (provider, model) => {
    const client = provider === 'openai' ? openai() : provider === 'deepseek' ? deepseek() : mistral();
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] } } },
      { type: 'function', function: { name: 'get_weather', parameters: WEATHER } },
    ];
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Lisbon?' }];
    const { data: first, response } = await client.chat.completions
      .create({ model, messages, tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } })
      .withResponse();
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    const toolCall = first.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(toolCall.function.name).toBe('get_weather');
    validates(WEATHER, JSON.parse(toolCall.function.arguments));
    expect((await call(response.headers.get('x-svc-request-id')!)).usage.output_tokens).toBeGreaterThan(0);
    messages.push(first.choices[0].message, { role: 'tool', tool_call_id: toolCall.id, content: '{"temp": 21}' });
    const second = await client.chat.completions.create({ model, messages, tools });
    expect(second.choices[0].finish_reason).toBe('stop');
    expect(second.choices[0].message.tool_calls ?? []).toEqual([]);
    expect(second.choices[0].message.content).toEqual(expect.any(String));
  });

  it('tool_choice "none" answers in text; "auto" calls the first tool', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER } }];
    const none = await openai().chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], tools, tool_choice: 'none' });
    expect(none.choices[0].message.tool_calls ?? []).toEqual([]);
    const auto = await openai().chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], tools, tool_choice: 'auto' });
    expect(auto.choices[0].message.tool_calls![0]).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
  });

  it('a streamed tool call arrives in deltas that add up to the same valid arguments', async () => {
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'Weather in Oslo, streamed' }], tools: [{ type: 'function' as const, function: { name: 'get_weather', parameters: WEATHER } }], tool_choice: 'required' as const };
    const whole = await openai().chat.completions.create(body);
    const stream = await openai().chat.completions.create({ ...body, stream: true });
    let name = '';
    let args = '';
    let finish: string | null = null;
    let pieces = 0;
    for await (const chunk of stream) {
      const d = chunk.choices[0]?.delta;
      for (const tc of d?.tool_calls ?? []) {
        name += tc.function?.name ?? '';
        if (tc.function?.arguments) {
          args += tc.function.arguments;
          pieces += 1;
        }
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(name).toBe('get_weather');
    expect(finish).toBe('tool_calls');
    expect(pieces).toBeGreaterThan(1);
    expect(args).toBe((whole.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall).function.arguments);
    validates(WEATHER, JSON.parse(args));
  });

  it('the Responses API: text.format json_schema', async () => {
    const r = await openai().responses.create({ model: 'gpt-4o-mini', input: 'Describe the release', text: { format: { type: 'json_schema', name: 'answer', strict: true, schema: ANSWER } } });
    validates(ANSWER, JSON.parse(r.output_text));
  });

  describe('the Responses API with tools', () => {
    const tools: OpenAI.Responses.FunctionTool[] = [
      { type: 'function', name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] }, strict: false },
      { type: 'function', name: 'get_weather', parameters: WEATHER as unknown as Record<string, unknown>, strict: true },
    ];

    it('a forced tool_choice: a function_call that validates; after its function_call_output, an answer (a two-step loop)', async () => {
      const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'What is the weather in Lisbon?' }];
      const { data: first, response } = await openai()
        .responses.create({ model: 'gpt-4o-mini', input, tools, tool_choice: { type: 'function', name: 'get_weather' } })
        .withResponse();
      expect(first.status).toBe('completed');
      const fc = first.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
      expect(fc).toMatchObject({ type: 'function_call', name: 'get_weather', call_id: expect.stringMatching(/^call_/) });
      validates(WEATHER, JSON.parse(fc.arguments));
      expect(first.output_text).toBe('');
      const recorded = await call(response.headers.get('x-svc-request-id')!);
      expect(recorded).toMatchObject({ status: 'completed', provider: 'openai', usage: { output_tokens: first.usage!.output_tokens } });
      expect(recorded.usage.output_tokens).toBeGreaterThan(0);
      input.push(fc, { type: 'function_call_output', call_id: fc.call_id, output: '{"temp": 21}' });
      const second = await openai().responses.create({ model: 'gpt-4o-mini', input, tools });
      expect(second.output.map((o) => o.type)).toEqual(['message']);
      expect(second.output_text.length).toBeGreaterThan(0);
    });

    it('tool_choice "none" answers in text; "required" and "auto" call the first tool', async () => {
      const none = await openai().responses.create({ model: 'gpt-4o-mini', input: 'hi', tools, tool_choice: 'none' });
      expect(none.output.map((o) => o.type)).toEqual(['message']);
      for (const choice of ['required', 'auto'] as const) {
        const r = await openai().responses.create({ model: 'gpt-4o-mini', input: 'hi', tools, tool_choice: choice });
        expect(r.output[0]).toMatchObject({ type: 'function_call', name: 'get_time' });
      }
    });

    it('a streamed function call: output_item.added, argument deltas that add up to the same valid arguments, usage recorded', async () => {
      const body = { model: 'gpt-4o-mini', input: 'Weather in Oslo, streamed', tools, tool_choice: { type: 'function' as const, name: 'get_weather' } };
      const whole = await openai().responses.create(body);
      const { data: stream, response } = await openai().responses.create({ ...body, stream: true }).withResponse();
      const types: string[] = [];
      let args = '';
      let added: any = null;
      let completed: OpenAI.Responses.Response | null = null;
      for await (const ev of stream) {
        types.push(ev.type);
        if (ev.type === 'response.output_item.added') added = ev.item;
        if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
        if (ev.type === 'response.completed') completed = ev.response;
      }
      expect(added).toMatchObject({ type: 'function_call', name: 'get_weather', arguments: '' });
      expect(types.filter((t) => t === 'response.function_call_arguments.delta').length).toBeGreaterThan(1);
      expect(types).toContain('response.function_call_arguments.done');
      expect(types).not.toContain('response.output_text.delta');
      expect(types.at(-1)).toBe('response.completed');
      const wholeCall = whole.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
      expect(args).toBe(wholeCall.arguments);
      validates(WEATHER, JSON.parse(args));
      expect(completed!.output[0]).toMatchObject({ type: 'function_call', arguments: args });
      const recorded = await call(response.headers.get('x-svc-request-id')!);
      expect(recorded).toMatchObject({ status: 'completed', usage: { input_tokens: completed!.usage!.input_tokens, output_tokens: completed!.usage!.output_tokens } });
    });

    it('the SDK\'s responses.stream helper assembles the same function call', async () => {
      const final = await openai()
        .responses.stream({ model: 'gpt-4o-mini', input: 'Weather in Oslo, streamed', tools, tool_choice: { type: 'function', name: 'get_weather' } })
        .finalResponse();
      const fc = final.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
      expect(fc.type).toBe('function_call');
      validates(WEATHER, JSON.parse(fc.arguments));
    });
  });
});

describe('anthropic proxy', () => {
  const anthropic = () => new Anthropic({ apiKey: p.clientKey, baseURL: `${base}/anthropic`, maxRetries: 0 });
  const tools: Anthropic.Tool[] = [
    { name: 'get_time', input_schema: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] } },
    { name: 'record_answer', description: 'How the SDKs get structured output: a forced tool', input_schema: ANSWER as unknown as Anthropic.Tool.InputSchema },
  ];

  it('a forced tool (structured output) validates; after the tool result, an answer', async () => {
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Describe the release' }];
    const { data: first, response } = await anthropic()
      .messages.create({ model: 'claude-sonnet-4-5', max_tokens: 512, messages, tools, tool_choice: { type: 'tool', name: 'record_answer' } })
      .withResponse();
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content[0] as Anthropic.ToolUseBlock;
    expect(use).toMatchObject({ type: 'tool_use', name: 'record_answer', id: expect.stringMatching(/^toolu_/) });
    validates(ANSWER, use.input);
    expect((await call(response.headers.get('x-svc-request-id')!)).usage.output_tokens).toBeGreaterThan(0);
    messages.push({ role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'stored' }] });
    const second = await anthropic().messages.create({ model: 'claude-sonnet-4-5', max_tokens: 512, messages, tools });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content[0].type).toBe('text');
  });

  it('a streamed tool call: input_json_delta pieces that the SDK assembles into the same input', async () => {
    const body = { model: 'claude-sonnet-4-5', max_tokens: 512, messages: [{ role: 'user' as const, content: 'Describe the release, streamed' }], tools, tool_choice: { type: 'any' as const } };
    const whole = await anthropic().messages.create(body);
    const final = await anthropic().messages.stream(body).finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content[0]).toEqual(whole.content[0]);
    validates({ type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] }, (final.content[0] as Anthropic.ToolUseBlock).input);
  });
});

describe('google proxy', () => {
  const google = () => new GoogleGenAI({ apiKey: p.clientKey, httpOptions: { baseUrl: `${base}/google` } });

  it('responseSchema (the OpenAPI subset) and responseJsonSchema: the answer validates', async () => {
    const r = await google().models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'Describe the release',
      config: {
        responseMimeType: 'application/json',
        responseSchema: { type: Type.OBJECT, properties: { title: { type: Type.STRING }, score: { type: Type.INTEGER, minimum: 1, maximum: 5 }, tags: { type: Type.ARRAY, items: { type: Type.STRING } } }, required: ['title', 'score', 'tags'] },
      },
    });
    validates({ type: 'object', properties: { title: { type: 'string' }, score: { type: 'integer', minimum: 1, maximum: 5 }, tags: { type: 'array', items: { type: 'string' } } }, required: ['title', 'score', 'tags'] }, JSON.parse(r.text!));
    const j = await google().models.generateContent({ model: 'gemini-2.5-flash', contents: 'Describe the release', config: { responseMimeType: 'application/json', responseJsonSchema: ANSWER } });
    validates(ANSWER, JSON.parse(j.text!));
  });

  it('function calling (mode ANY): a call that validates; after its response, an answer', async () => {
    const tools = [{ functionDeclarations: [{ name: 'get_weather', parametersJsonSchema: WEATHER }] }];
    const first = await google().models.generateContent({
      model: 'gemini-2.5-flash',
      contents: [{ role: 'user', parts: [{ text: 'Weather in Rome?' }] }],
      config: { tools, toolConfig: { functionCallingConfig: { mode: 'ANY' as never } } },
    });
    const fc = first.functionCalls![0];
    expect(fc.name).toBe('get_weather');
    validates(WEATHER, fc.args);
    const second = await google().models.generateContent({
      model: 'gemini-2.5-flash',
      contents: [
        { role: 'user', parts: [{ text: 'Weather in Rome?' }] },
        { role: 'model', parts: [{ functionCall: fc }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temp: 24 } } }] },
      ],
      config: { tools },
    });
    expect(second.functionCalls ?? []).toEqual([]);
    expect(second.text).toEqual(expect.any(String));
  });
});
