/**
 * The read-only routes the official SDKs call (model lists and details, token counting), through
 * the proxies: authenticated with the project key, forwarded with the managed key, not governed
 * (no permit, no call record), counted in tollgate_proxy_reads_total.
 */
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { Mistral } from '@mistralai/mistralai';
import { startHarness, Harness, patchPolicy } from '../executions/helpers';
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

const openai = (key = p.clientKey) => new OpenAI({ apiKey: key, baseURL: `${base}/openai/v1`, maxRetries: 0 });
const deepseek = () => new OpenAI({ apiKey: p.clientKey, baseURL: `${base}/deepseek`, maxRetries: 0 });
const anthropic = () => new Anthropic({ apiKey: p.clientKey, baseURL: `${base}/anthropic`, maxRetries: 0 });
const google = () => new GoogleGenAI({ apiKey: p.clientKey, httpOptions: { baseUrl: `${base}/google` } });
const mistral = () => new Mistral({ apiKey: p.clientKey, serverURL: `${base}/mistral`, retryConfig: { strategy: 'none' } });

async function governedRecords(): Promise<number> {
  const { rows } = await h.tg.db.query('SELECT (SELECT count(*) FROM permits WHERE project_id = $1)::int + (SELECT count(*) FROM calls WHERE project_id = $1)::int AS n', [p.project.id]);
  return rows[0].n;
}

describe('read-only proxy routes with the official SDKs', () => {
  it('openai: models.list and models.retrieve; an unknown model is the SDK\'s NotFoundError; a bad key its AuthenticationError', async () => {
    const ids: string[] = [];
    for await (const m of openai().models.list()) ids.push(m.id);
    expect(ids).toEqual(expect.arrayContaining(['gpt-4o-mini', 'text-embedding-3-small']));
    expect(await openai().models.retrieve('gpt-4o-mini')).toMatchObject({ id: 'gpt-4o-mini', object: 'model' });
    await expect(openai().models.retrieve('no-such-model')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(openai('tg_client_not_a_real_key').models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('deepseek (openai SDK): models.list and models.retrieve', async () => {
    const ids: string[] = [];
    for await (const m of deepseek().models.list()) ids.push(m.id);
    expect(ids).toEqual(expect.arrayContaining(['deepseek-chat']));
    expect(await deepseek().models.retrieve('deepseek-chat')).toMatchObject({ id: 'deepseek-chat' });
  });

  it('mistral: models.list', async () => {
    const list = await mistral().models.list();
    expect((list.data ?? []).map((m) => m.id)).toEqual(expect.arrayContaining(['mistral-small-latest']));
  });

  it('anthropic: models.list and messages.countTokens', async () => {
    const ids: string[] = [];
    for await (const m of anthropic().models.list()) ids.push(m.id);
    expect(ids).toEqual(expect.arrayContaining(['claude-haiku-4-5']));
    const counted = await anthropic().messages.countTokens({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'count these few words' }] });
    expect(counted.input_tokens).toBeGreaterThan(0);
  });

  it('google: models.list, models.get and models.countTokens', async () => {
    const names: string[] = [];
    for await (const m of await google().models.list()) names.push(String(m.name));
    expect(names).toEqual(expect.arrayContaining(['models/gemini-2.5-flash']));
    expect(await google().models.get({ model: 'gemini-2.5-flash' })).toMatchObject({ name: 'models/gemini-2.5-flash' });
    const counted = await google().models.countTokens({ model: 'gemini-2.5-flash', contents: 'count these few words' });
    expect(counted.totalTokens).toBeGreaterThan(0);
  });

  it('reads are not governed (no permit, no execution) and are counted in metrics; other paths are a native 404', async () => {
    expect(await governedRecords()).toBe(0);
    const metrics = await h.call('GET', '/metrics');
    expect(metrics.text).toMatch(/tollgate_proxy_reads_total\{provider="openai",route="GET \/v1\/models",status="200"\} \d+/);
    const unknown = await h.call('GET', '/v1/proxy/openai/v1/files', { key: p.clientKey });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toMatchObject({ code: 'unsupported_proxy_path' });
  });
  it('reads count against the project\'s request rate limits, shared with governed calls', async () => {
    const q = await h.project();
    await patchPolicy(h, q, { rate_limits: [{ id: 'hourly', metric: 'requests', limit: 3, window_seconds: 3600, action: 'throttle' }] });
    const list = () => h.call('GET', '/v1/proxy/openai/v1/models', { key: q.clientKey });
    for (let i = 0; i < 3; i++) expect((await list()).status).toBe(200);
    const throttled = await list();
    expect(throttled.status).toBe(429);
    expect(throttled.json.error).toMatchObject({ code: 'budget.rate_limit_throttled' });
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The window is full for governed calls too.
    const chat = await h.call('POST', '/v1/proxy/openai/v1/chat/completions', { key: q.clientKey, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } });
    expect(chat.status).toBe(429);
  });
});
