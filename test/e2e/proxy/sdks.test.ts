/**
 * The official provider SDKs, unchanged, pointed at Tollgate's proxy base URLs (Tollgate in
 * process, providers on the emulator): every operation of each provider works, usage is recorded,
 * and a governance denial surfaces as the SDK's own API error class with the reason code visible.
 */
import OpenAI, { toFile } from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { ApiError as GoogleApiError, GoogleGenAI } from '@google/genai';
import { Mistral } from '@mistralai/mistralai';
import { SDKError as MistralSDKError } from '@mistralai/mistralai/models/errors';
import { startHarness, Harness, patchPolicy, eventTypes } from '../executions/helpers';
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
const deepseek = (key = p.clientKey) => new OpenAI({ apiKey: key, baseURL: `${base}/deepseek`, maxRetries: 0 });
const anthropic = (key = p.clientKey) => new Anthropic({ apiKey: key, baseURL: `${base}/anthropic`, maxRetries: 0 });
const google = (key = p.clientKey) => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: `${base}/google` } });
const mistral = (key = p.clientKey) => new Mistral({ apiKey: key, serverURL: `${base}/mistral`, retryConfig: { strategy: 'none' } });

async function callRecords(projectId: string): Promise<any[]> {
  const { rows } = await h.tg.db.query(`SELECT * FROM calls WHERE project_id = $1 AND route = 'proxy' ORDER BY created_at`, [projectId]);
  return rows;
}

async function lastExecution(projectId: string): Promise<any> {
  const rows = await callRecords(projectId);
  return rows[rows.length - 1];
}

/** Some SDKs stop reading a stream at its terminal event, before Tollgate has recorded it: poll briefly. */
async function lastStreamExecution(projectId: string, provider: string): Promise<any> {
  for (let i = 0; i < 40; i++) {
    const row = await lastExecution(projectId);
    if (row?.mode === 'stream' && row.provider === provider) return row;
    await new Promise((r) => setTimeout(r, 50));
  }
  return lastExecution(projectId);
}

describe('openai SDK through /v1/proxy/openai/v1', () => {
  it('chat (sync) — native response, usage and cost recorded, timeline events', async () => {
    const { data: r, response } = await openai().chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello proxy' }] }).withResponse();
    expect(r.object).toBe('chat.completion');
    expect(r.choices[0].message.content).toContain('hello proxy');
    expect(response.headers.get('x-svc-permit-id')).toMatch(/^permit_/);
    const requestId = response.headers.get('x-svc-request-id')!;
    const row = await lastExecution(p.project.id);
    expect(row).toMatchObject({ id: requestId, route: 'proxy', operation: 'generate.text', mode: 'sync', status: 'completed', provider: 'openai', model: 'gpt-4o-mini', input_tokens: r.usage!.prompt_tokens, output_tokens: r.usage!.completion_tokens, estimated_final: false });
    expect(Number(row.cost_usd_micros)).toBeGreaterThan(0);
    expect(await eventTypes(h.tg, p.project.id, requestId)).toEqual([
      'permit.allowed',
      'permit.expiry_scheduled',
      'routing.selected_model',
      'execution.started',
      'provider.request_sent',
      'provider.response_received',
      'usage.recorded',
      'request.completed',
    ]);
    const permit = await h.tg.db.query('SELECT route FROM permits WHERE id = $1', [response.headers.get('x-svc-permit-id')]);
    expect(permit.rows[0].route).toBe('proxy:openai');
  });

  it('chat (stream) — SSE piped through, usage from the final chunk', async () => {
    const stream = await openai().chat.completions.create({ model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'stream proxy' }] });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toContain('stream proxy');
    const row = await lastExecution(p.project.id);
    expect(row).toMatchObject({ mode: 'stream', status: 'completed', input_tokens: usage!.prompt_tokens, output_tokens: usage!.completion_tokens, estimated_final: false });
    expect(Number(row.cost_usd_micros)).toBeGreaterThan(0);
  });

  it('stream without include_usage — usage estimated with the tokenizer and flagged', async () => {
    const stream = await openai().chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'no usage chunk' }] });
    for await (const _ of stream) void _;
    const row = await lastExecution(p.project.id);
    expect(row).toMatchObject({ mode: 'stream', status: 'completed', estimated_final: true });
    expect(row.output_tokens).toBeGreaterThan(0);
  });

  it('embeddings, images, speech, transcription (multipart byte for byte)', async () => {
    const e = await openai().embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'] });
    expect(e.data).toHaveLength(2);
    expect(e.data[0].embedding).toHaveLength(16);
    expect((await lastExecution(p.project.id)).operation).toBe('embed.text');

    const img = await openai().images.generate({ model: 'gpt-image-1', prompt: 'a cat' });
    expect(img.data?.[0].b64_json).toBeTruthy();
    expect(await lastExecution(p.project.id)).toMatchObject({ operation: 'generate.image', status: 'completed' });

    const speech = await openai().audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'hello' });
    expect(Buffer.from(await speech.arrayBuffer()).subarray(0, 3).toString()).toBe('ID3');
    const sp = await lastExecution(p.project.id);
    expect(sp).toMatchObject({ operation: 'generate.audio', status: 'completed' });
    expect(Number(sp.cost_usd_micros)).toBe(5 * 15); // 5 characters at tts-1's per-character price

    const tr = await openai().audio.transcriptions.create({ model: 'whisper-1', file: await toFile(Buffer.from('spoken words'), 'a.mp3', { type: 'audio/mpeg' }) });
    expect(tr.text).toBe('spoken words');
    expect(await lastExecution(p.project.id)).toMatchObject({ operation: 'transcribe.audio', status: 'completed' });
  });

  it('native upstream errors keep their shape and status', async () => {
    const err = await openai().chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: '[[emulator:status=400]]' }] }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
  });
});

describe('deepseek through the openai SDK at /v1/proxy/deepseek', () => {
  it('chat sync and stream', async () => {
    const r = await deepseek().chat.completions.create({ model: 'deepseek-chat', messages: [{ role: 'user', content: 'hello deepseek' }] });
    expect(r.choices[0].message.content).toContain('hello deepseek');
    expect(await lastExecution(p.project.id)).toMatchObject({ provider: 'deepseek', status: 'completed', input_tokens: r.usage!.prompt_tokens });
    const stream = await deepseek().chat.completions.create({ model: 'deepseek-chat', stream: true, messages: [{ role: 'user', content: 'stream deepseek' }] });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
    expect(text).toContain('stream deepseek');
    expect(await lastExecution(p.project.id)).toMatchObject({ provider: 'deepseek', mode: 'stream', status: 'completed', estimated_final: false });
  });
});

describe('anthropic SDK through /v1/proxy/anthropic', () => {
  it('messages sync, raw stream and the MessageStream helper', async () => {
    const r = await anthropic().messages.create({ model: 'claude-haiku-4-5', max_tokens: 200, system: 'be nice', messages: [{ role: 'user', content: 'hello claude' }] });
    expect(r.content[0].type === 'text' && r.content[0].text).toContain('hello claude');
    expect(await lastExecution(p.project.id)).toMatchObject({ provider: 'anthropic', status: 'completed', input_tokens: r.usage.input_tokens, output_tokens: r.usage.output_tokens });

    const stream = await anthropic().messages.create({ model: 'claude-haiku-4-5', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'stream claude' }] });
    const types: string[] = [];
    for await (const ev of stream) types.push(ev.type);
    expect(types[0]).toBe('message_start');
    expect(types[types.length - 1]).toBe('message_stop');
    const final = await anthropic().messages.stream({ model: 'claude-haiku-4-5', max_tokens: 200, messages: [{ role: 'user', content: 'helper' }] }).finalMessage();
    const row = await lastExecution(p.project.id);
    expect(row).toMatchObject({ provider: 'anthropic', mode: 'stream', status: 'completed', output_tokens: final.usage.output_tokens, estimated_final: false });
  });
});

describe('@google/genai through /v1/proxy/google', () => {
  it('generateContent, generateContentStream, embedContent', async () => {
    const r = await google().models.generateContent({ model: 'gemini-2.5-flash', contents: 'hello gemini' });
    expect(r.text).toContain('hello gemini');
    expect(await lastExecution(p.project.id)).toMatchObject({ provider: 'google', model: 'gemini-2.5-flash', status: 'completed', input_tokens: r.usageMetadata!.promptTokenCount });

    const stream = await google().models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'stream gemini' });
    let text = '';
    let total = 0;
    for await (const chunk of stream) {
      text += chunk.text ?? '';
      total = chunk.usageMetadata?.totalTokenCount ?? total;
    }
    expect(text).toContain('stream gemini');
    const row = await lastExecution(p.project.id);
    expect(row).toMatchObject({ mode: 'stream', status: 'completed', estimated_final: false });
    expect(row.input_tokens + row.output_tokens).toBe(total);

    const e = await google().models.embedContent({ model: 'gemini-embedding-001', contents: ['a', 'b'] });
    expect(e.embeddings).toHaveLength(2);
    expect(await lastExecution(p.project.id)).toMatchObject({ operation: 'embed.text', status: 'completed' });
  });

  it('the key in ?key= works too', async () => {
    const res = await fetch(`${base}/google/v1beta/models/gemini-2.5-flash:generateContent?key=${p.clientKey}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'query key' }] }] }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-permit-id')).toMatch(/^permit_/);
  });
});

describe('mistral SDK through /v1/proxy/mistral', () => {
  it('chat, stream, vision and embeddings', async () => {
    const r = await mistral().chat.complete({ model: 'mistral-small-latest', messages: [{ role: 'user', content: 'hello mistral' }] });
    expect(String(r.choices?.[0].message?.content)).toContain('hello mistral');
    const stream = await mistral().chat.stream({ model: 'mistral-small-latest', messages: [{ role: 'user', content: 'stream mistral' }] });
    let text = '';
    for await (const ev of stream) text += String(ev.data.choices[0]?.delta?.content ?? '');
    expect(text).toContain('stream mistral');
    expect(await lastStreamExecution(p.project.id, 'mistral')).toMatchObject({ provider: 'mistral', mode: 'stream', status: 'completed', estimated_final: false });
    const v = await mistral().chat.complete({ model: 'mistral-small-latest', messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', imageUrl: 'https://x/c.png' }] }] });
    expect(String(v.choices?.[0].message?.content)).toContain('look');
    expect((await lastExecution(p.project.id)).operation).toBe('understand.image');
    const e = await mistral().embeddings.create({ model: 'mistral-embed', inputs: ['a', 'b'] });
    expect(e.data).toHaveLength(2);
  });
});

describe('denials in each SDK’s own error class', () => {
  let d: TestProject;
  beforeAll(async () => {
    d = await h.project();
    await patchPolicy(h, d, { deny_rules: [{ id: 'no-proxy', match: { route: 'proxy:*' }, reason: 'Proxies are closed for this project' }] });
  });

  it('openai: PermissionDeniedError, reason code in error.code', async () => {
    const err = await openai(d.clientKey).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(err.status).toBe(403);
    expect(err.code).toBe('policy.rule_denied');
    expect(err.message).toContain('policy.rule_denied');
    expect(err.headers.get('x-svc-permit-id')).toMatch(/^permit_/);
    const row = await lastExecution(d.project.id);
    expect(row).toMatchObject({ status: 'denied', status_code: 403, input_tokens: 0 });
    expect(await eventTypes(h.tg, d.project.id, row.id)).toEqual(['permit.denied', 'request.denied']);
  });

  it('deepseek (openai SDK): PermissionDeniedError', async () => {
    const err = await deepseek(d.clientKey).chat.completions.create({ model: 'deepseek-chat', messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(err.code).toBe('policy.rule_denied');
  });

  it('anthropic: PermissionDeniedError with permission_error', async () => {
    const err = await anthropic(d.clientKey).messages.create({ model: 'claude-haiku-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(err.status).toBe(403);
    expect(err.error).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    expect(err.message).toContain('policy.rule_denied');
  });

  it('google: ApiError 403 PERMISSION_DENIED', async () => {
    const err = await google(d.clientKey).models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' }).catch((e) => e);
    expect(err).toBeInstanceOf(GoogleApiError);
    expect(err.status).toBe(403);
    expect(err.message).toContain('PERMISSION_DENIED');
    expect(err.message).toContain('policy.rule_denied');
  });

  it('mistral: SDKError 403 with the code in the body', async () => {
    const err = await mistral(d.clientKey).chat.complete({ model: 'mistral-small-latest', messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
    expect(err).toBeInstanceOf(MistralSDKError);
    expect(err.statusCode).toBe(403);
    expect(err.body).toContain('policy.rule_denied');
  });

  it('throttle: 429 with Retry-After, the SDK’s RateLimitError', async () => {
    const t = await h.project();
    await patchPolicy(h, t, { rate_limits: [{ id: 'one', metric: 'requests', limit: 1, window_seconds: 3600, action: 'throttle' }] });
    await openai(t.clientKey).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'first' }] });
    const err = await openai(t.clientKey).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'second' }] }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.code).toBe('budget.rate_limit_throttled');
    expect(Number(err.headers.get('retry-after'))).toBeGreaterThan(0);
    const aerr = await anthropic(t.clientKey).messages.create({ model: 'claude-haiku-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'third' }] }).catch((e) => e);
    expect(aerr).toBeInstanceOf(Anthropic.RateLimitError);
  });
});

describe('authentication in the provider-native shape', () => {
  it('a wrong key is a 401 in each SDK', async () => {
    const bad = 'tg_client_nope';
    expect(await openai(bad).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e)).toBeInstanceOf(OpenAI.AuthenticationError);
    const a = await anthropic(bad).messages.create({ model: 'claude-haiku-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(a).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(a.error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const g = await google(bad).models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' }).catch((e) => e);
    expect(g).toBeInstanceOf(GoogleApiError);
    expect(g.status).toBe(401);
    const m = await mistral(bad).chat.complete({ model: 'mistral-small-latest', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(m.statusCode).toBe(401);
  });

  it('no key: 401 in the native shape', async () => {
    const res = await fetch(`${base}/anthropic/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error', message: expect.stringContaining('x-api-key') } });
    const o = await fetch(`${base}/openai/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(await o.json()).toMatchObject({ error: { code: 'authentication_required', type: 'invalid_request_error', param: null } });
  });
});
