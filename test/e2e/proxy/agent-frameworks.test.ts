/**
 * Popular agent frameworks pointed at the proxies, as a user would point them at Tollgate: LangChain.js
 * and the Vercel AI SDK, each on openai, anthropic and google. For each: a structured-output call whose
 * object matches the zod schema, a tool loop (a tool call, the tool run, then a text answer), and a
 * streamed answer in several pieces. The emulator answers deterministically (emulator/structured.ts).
 * Each test runs in its own project, so the project's call log must hold exactly the calls the framework
 * made, every one governed and completed.
 */
import { z } from 'zod';
import { ChatOpenAI } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { ChatGoogleGenerativeAI } from '@langchain/google-genai';
import { tool as lcTool } from '@langchain/core/tools';
import { AIMessage, BaseMessage, HumanMessage } from '@langchain/core/messages';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { generateObject, generateText, Output, streamText, stepCountIs, tool as aiTool, type LanguageModel } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { startHarness, Harness } from '../executions/helpers';
import type { TestProject } from '../../support/tollgate';

let h: Harness;
let base: string;
beforeAll(async () => {
  h = await startHarness();
  base = `${h.tg.url}/v1/proxy`;
});
afterAll(async () => h?.close());

type Provider = 'openai' | 'anthropic' | 'google';
const PROVIDERS: Provider[] = ['openai', 'anthropic', 'google'];
const MODEL: Record<Provider, string> = { openai: 'gpt-4o-mini', anthropic: 'claude-sonnet-4-5', google: 'gemini-2.5-flash' };

const Release = z.object({
  title: z.string(),
  tags: z.array(z.string()).min(1),
  score: z.number().min(0).max(10),
  draft: z.boolean(),
});
const Weather = z.object({ city: z.string().min(2), unit: z.enum(['celsius', 'fahrenheit']) });
const WEATHER_RESULT = { temp: 21, sky: 'clear' };

/**
 * The project's proxy calls, once `n` are recorded (recording finishes after the response does).
 * Exactly `n`: a framework that retried or made a hidden call would show here.
 */
async function proxyCalls(p: TestProject, provider: Provider, n: number): Promise<any[]> {
  let data: any[] = [];
  for (let i = 0; i < 60; i++) {
    const res = await h.call('GET', '/v1/calls?route=proxy&limit=100', { key: p.clientKey });
    expect(res.status).toBe(200);
    data = res.json.data;
    if (data.length >= n) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(data).toHaveLength(n);
  for (const c of data) {
    expect(c).toMatchObject({ route: 'proxy', status: 'completed', provider, model: MODEL[provider] });
    expect(c.usage.output_tokens).toBeGreaterThan(0);
  }
  return data;
}

describe('LangChain.js', () => {
  const chat = (provider: Provider, p: TestProject): BaseChatModel => {
    if (provider === 'openai') return new ChatOpenAI({ model: MODEL.openai, apiKey: p.clientKey, configuration: { baseURL: `${base}/openai/v1` }, maxRetries: 0 });
    if (provider === 'anthropic') return new ChatAnthropic({ model: MODEL.anthropic, apiKey: p.clientKey, anthropicApiUrl: `${base}/anthropic`, maxRetries: 0 });
    return new ChatGoogleGenerativeAI({ model: MODEL.google, apiKey: p.clientKey, baseUrl: `${base}/google`, maxRetries: 0 });
  };
  const getWeather = lcTool(async () => JSON.stringify(WEATHER_RESULT), { name: 'get_weather', description: 'Current weather in a city', schema: Weather });

  describe.each(PROVIDERS)('%s', (provider) => {
    let p: TestProject;
    beforeEach(async () => {
      p = await h.project();
    });

    it('withStructuredOutput(zod) returns an object that parses', async () => {
      const out = await chat(provider, p).withStructuredOutput(Release, { name: 'release' }).invoke('Summarise the release notes');
      expect(Release.parse(out)).toEqual(out);
      await proxyCalls(p, provider, 1);
    });

    it('a tool loop: the model calls the bound tool, the tool runs, the next turn answers in text', async () => {
      const model = chat(provider, p).bindTools!([getWeather]);
      const messages: BaseMessage[] = [new HumanMessage('What is the weather in Lisbon?')];
      const first = (await model.invoke(messages)) as AIMessage;
      expect(first.tool_calls).toHaveLength(1);
      const call = first.tool_calls![0];
      expect(call.name).toBe('get_weather');
      Weather.parse(call.args);
      const result = await getWeather.invoke(call);
      expect(JSON.parse(result.content as string)).toEqual(WEATHER_RESULT);
      messages.push(first, result);
      const second = (await model.invoke(messages)) as AIMessage;
      expect(second.tool_calls ?? []).toEqual([]);
      expect(second.text.length).toBeGreaterThan(0);
      await proxyCalls(p, provider, 2);
    });

    it('.stream() yields the answer in several chunks', async () => {
      const pieces: string[] = [];
      for await (const chunk of await chat(provider, p).stream('Tell me about governed execution')) {
        if (chunk.text) pieces.push(chunk.text);
      }
      expect(pieces.length).toBeGreaterThan(1);
      expect(pieces.join('').length).toBeGreaterThan(0);
      await proxyCalls(p, provider, 1);
    });
  });
});

describe('Vercel AI SDK', () => {
  const model = (provider: Provider, p: TestProject): LanguageModel => {
    if (provider === 'openai') return createOpenAI({ apiKey: p.clientKey, baseURL: `${base}/openai/v1` })(MODEL.openai);
    if (provider === 'anthropic') return createAnthropic({ apiKey: p.clientKey, baseURL: `${base}/anthropic/v1` })(MODEL.anthropic);
    return createGoogleGenerativeAI({ apiKey: p.clientKey, baseURL: `${base}/google/v1beta` })(MODEL.google);
  };
  let ran: unknown[] = [];
  const getWeather = aiTool({
    description: 'Current weather in a city',
    inputSchema: Weather,
    execute: async (input) => {
      ran.push(input);
      return WEATHER_RESULT;
    },
  });

  describe.each(PROVIDERS)('%s', (provider) => {
    let p: TestProject;
    beforeEach(async () => {
      p = await h.project();
      ran = [];
    });

    const structured = async (m: LanguageModel, providerOptions?: Record<string, any>) => {
      const { object } = await generateObject({ model: m, schema: Release, prompt: 'Summarise the release notes', providerOptions, maxRetries: 0 });
      expect(Release.parse(object)).toEqual(object);
      // The same through generateText's `output`, which this major recommends over generateObject.
      const { output } = await generateText({ model: m, output: Output.object({ schema: Release }), prompt: 'Summarise the changes', providerOptions, maxRetries: 0 });
      expect(Release.parse(output)).toEqual(output);
      await proxyCalls(p, provider, 2);
    };
    const toolLoop = async (m: LanguageModel) => {
      const r = await generateText({ model: m, tools: { get_weather: getWeather }, stopWhen: stepCountIs(3), prompt: 'What is the weather in Lisbon?', maxRetries: 0 });
      expect(r.steps).toHaveLength(2);
      expect(r.steps[0].toolCalls).toHaveLength(1);
      expect(r.steps[0].toolCalls[0].toolName).toBe('get_weather');
      expect(ran).toHaveLength(1);
      Weather.parse(ran[0]);
      expect(r.steps[0].toolResults[0].output).toEqual(WEATHER_RESULT);
      expect(r.steps[1].toolCalls).toEqual([]);
      expect(r.finishReason).toBe('stop');
      expect(r.text.length).toBeGreaterThan(0);
      await proxyCalls(p, provider, 2);
    };

    // Anthropic: the AI SDK's default for models with native structured outputs sends
    // `output_config.format` (json_schema); the forced-tool mode is tested below as well.
    it('generateObject(zod) and Output.object(zod) return objects that parse', async () => {
      await structured(model(provider, p));
    });

    if (provider === 'anthropic') {
      it('generateObject(zod) and Output.object(zod) through a forced tool (structuredOutputMode: jsonTool) return objects that parse', async () => {
        await structured(model(provider, p), { anthropic: { structuredOutputMode: 'jsonTool' } });
      });
    }

    // OpenAI: the AI SDK's default model speaks the Responses API; Chat Completions is covered below.
    it('generateText with a tool: one tool call, its result, then a text answer (stopWhen: stepCountIs(3))', async () => {
      await toolLoop(model(provider, p));
    });

    if (provider === 'openai') {
      it('generateText with a tool over Chat Completions (openai.chat): one tool call, its result, then a text answer', async () => {
        await toolLoop(createOpenAI({ apiKey: p.clientKey, baseURL: `${base}/openai/v1` }).chat(MODEL.openai));
      });
    }

    it('streamText yields several text deltas', async () => {
      const r = streamText({ model: model(provider, p), prompt: 'Tell me about governed execution', maxRetries: 0 });
      const pieces: string[] = [];
      for await (const delta of r.textStream) pieces.push(delta);
      expect(pieces.length).toBeGreaterThan(1);
      expect(await r.text).toBe(pieces.join(''));
      await proxyCalls(p, provider, 1);
    });
  });
});
