/**
 * The provider emulator: the five providers' native HTTP APIs, each under its own prefix
 * (`/openai/v1/...`, `/anthropic/v1/messages`, `/google/v1beta/models/{m}:...`, `/deepseek/...`,
 * `/mistral/v1/...`), with their real response shapes, SSE framing and error bodies. Output is
 * deterministic (derived from a hash of the input); token counts use the same tokenizer as
 * Tollgate's estimator. Fault controls: see ./faults.ts and README.md.
 *
 * Size: a development and test double of five providers' wire formats (routing, streaming and
 * faults per provider); the shared content and faults live in content.ts and faults.ts.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { providerModules } from '../providers';
import type { ProviderId } from '../providers/types';
import { countChatTokens, countTokens } from '../pricing/tokenizer';
import { readRoute } from './models';
import { audioFor, audioSecondsOf, chunksOf, embeddingBase64, embeddingFor, hashHex, outputTokensOf, pngFor, replyFor, transcriptOf } from './content';
import { parseFaults, type Faults } from './faults';
import { anthropicResponseSchema, anthropicToolCall, googleResponseSchema, googleToolCall, openaiResponseSchema, openaiToolCall, responsesSchema, responsesToolCall, toolCallId, valueFor } from './structured';
import { handlePayments } from './payments';

interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  provider: ProviderId;
  path: string; // after the provider prefix, without query
  query: URLSearchParams;
  raw: Buffer;
  body: any;
  baseUrl: string;
  /** Aborted when the caller hangs up before the response finished (see `delay`). */
  hangUp?: AbortSignal;
}

class HttpFail extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

const now = () => Math.floor(Date.now() / 1000);

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), ...headers });
  res.end(data);
}

function sendError(ctx: Ctx, status: number, message: string, faults?: Faults) {
  const headers: Record<string, string> = {};
  if (status === 429) headers['retry-after'] = String(faults?.retryAfter ?? 1);
  sendJson(ctx.res, status, providerModules[ctx.provider].errorBody(status, message), headers);
}

function hasKey(ctx: Ctx): boolean {
  const h = ctx.req.headers;
  const bearer = /^Bearer\s+\S+/i.test(String(h.authorization ?? ''));
  if (ctx.provider === 'anthropic') return Boolean(h['x-api-key']) || bearer;
  if (ctx.provider === 'google') return Boolean(h['x-goog-api-key']) || Boolean(ctx.query.get('key')) || bearer;
  return bearer;
}

/** Every user-visible text of the request (for markers and token counts). */
function textsOf(ctx: Ctx): string[] {
  if (ctx.body instanceof FormData) {
    const p = ctx.body.get('prompt');
    return typeof p === 'string' ? [p] : [];
  }
  return providerModules[ctx.provider].inspectableText(ctx.body);
}

/**
 * An emulated delay that ends early when the caller hangs up, as a provider stops working on a
 * request whose connection closed: no timer outlives the call (a test's process can exit).
 */
function delay(ctx: Ctx, ms: number): Promise<void> {
  if (!ctx.hangUp) {
    const hungUp = new AbortController();
    if (ctx.req.socket.destroyed) hungUp.abort();
    else ctx.res.once('close', () => ctx.res.writableFinished || hungUp.abort());
    ctx.hangUp = hungUp.signal;
  }
  return sleep(ms, undefined, { signal: ctx.hangUp });
}

/** SSE writer honouring ttft, chunk delay and stream-break faults. */
function sseWriter(ctx: Ctx, faults: Faults) {
  ctx.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  ctx.res.flushHeaders();
  let sent = 0;
  return {
    /** Writes one event; returns false (and kills the connection) when the break fault fires. */
    async write(data: string, event?: string): Promise<boolean> {
      if (sent === 0 && faults.ttftMs) await delay(ctx, faults.ttftMs);
      else if (faults.chunkDelayMs) await delay(ctx, faults.chunkDelayMs);
      if (faults.streamBreakAfter !== undefined && sent >= faults.streamBreakAfter) {
        ctx.res.socket?.destroy();
        return false;
      }
      // Wait for the event to reach the socket, so a later break cuts after it, not before.
      await new Promise<void>((resolve) => ctx.res.write(`${event ? `event: ${event}\n` : ''}data: ${data}\n\n`, () => resolve()));
      sent++;
      return true;
    },
    end: () => ctx.res.end(),
  };
}

// ---------------------------------------------------------------- OpenAI-shaped chat (openai, deepseek, mistral)

/** A tool call's arguments in stream pieces (JSON has no word breaks to split on). */
const slices = (s: string, n = 16): string[] => s.match(new RegExp(`[\\s\\S]{1,${n}}`, 'g')) ?? [''];

function chatPrompt(body: any): { texts: string[]; last: string } {
  const texts = providerModules.openai.inspectableText(body);
  const users = (Array.isArray(body?.messages) ? body.messages : []).filter((m: any) => m?.role === 'user');
  const lastUser = users[users.length - 1];
  const last = lastUser ? providerModules.openai.inspectableText({ messages: [lastUser] }).join('\n') : texts.join('\n');
  return { texts, last };
}

function chatUsage(provider: ProviderId, input: number, output: number, cached: number) {
  const base = { prompt_tokens: input, completion_tokens: output, total_tokens: input + output };
  if (provider === 'openai') {
    return { ...base, prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 } };
  }
  if (provider === 'deepseek') return { ...base, prompt_cache_hit_tokens: cached, prompt_cache_miss_tokens: input - cached };
  return base;
}

async function chat(ctx: Ctx, faults: Faults) {
  const b = ctx.body;
  if (!b?.model) throw new HttpFail(400, 'you must provide a model parameter');
  if (!Array.isArray(b.messages) || b.messages.length === 0) throw new HttpFail(400, "'messages' must be a non-empty array");
  const { texts, last } = chatPrompt(b);
  const maxTokens = b.max_completion_tokens ?? b.max_tokens;
  const seed = JSON.stringify(b.messages);
  const tool = openaiToolCall(b);
  const schema = tool ? null : openaiResponseSchema(b);
  const reply = schema ? { text: JSON.stringify(valueFor(schema, seed)), truncated: false } : replyFor(last, maxTokens, faults.fillOutput);
  const { truncated } = reply;
  const toolCall = tool ? { id: toolCallId('call_', seed), type: 'function', function: { name: tool.name, arguments: JSON.stringify(valueFor(tool.parameters, seed)) } } : null;
  const text = toolCall ? '' : reply.text;
  const input = countChatTokens(texts);
  const output = toolCall ? countTokens(toolCall.function.arguments) : outputTokensOf(text, maxTokens);
  const cached = Math.min(faults.cachedTokens, input);
  const usage = chatUsage(ctx.provider, input, output, cached);
  const id = `${ctx.provider === 'openai' ? 'chatcmpl-' : ''}${hashHex(JSON.stringify(b)).slice(0, 24)}`;
  const finish = toolCall ? 'tool_calls' : truncated ? 'length' : 'stop';
  const created = now();
  if (!b.stream) {
    const message: Record<string, unknown> = { role: 'assistant', content: toolCall ? null : text };
    if (ctx.provider === 'openai') Object.assign(message, { refusal: null, annotations: [] });
    if (ctx.provider === 'mistral') Object.assign(message, { tool_calls: null, prefix: false });
    if (toolCall) message.tool_calls = [toolCall];
    return sendJson(ctx.res, 200, {
      id,
      object: 'chat.completion',
      created,
      model: b.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
      ...(faults.omitUsage ? {} : { usage }),
      ...(ctx.provider === 'mistral' ? {} : { system_fingerprint: 'fp_emulator' }),
    });
  }
  const w = sseWriter(ctx, faults);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    JSON.stringify({ id, object: 'chat.completion.chunk', created, model: b.model, ...(ctx.provider === 'mistral' ? {} : { system_fingerprint: 'fp_emulator' }), choices, ...extra });
  if (!(await w.write(chunk([{ index: 0, delta: { role: 'assistant', content: toolCall ? null : '' }, logprobs: null, finish_reason: null }])))) return;
  if (toolCall) {
    // The call's name first, then its arguments in pieces, as the provider streams them.
    const head = { index: 0, id: toolCall.id, type: 'function', function: { name: toolCall.function.name, arguments: '' } };
    if (!(await w.write(chunk([{ index: 0, delta: { tool_calls: [head] }, logprobs: null, finish_reason: null }])))) return;
    for (const piece of slices(toolCall.function.arguments)) {
      if (!(await w.write(chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: piece } }] }, logprobs: null, finish_reason: null }])))) return;
    }
  }
  for (const piece of toolCall ? [] : chunksOf(text)) {
    if (!(await w.write(chunk([{ index: 0, delta: { content: piece }, logprobs: null, finish_reason: null }])))) return;
  }
  if (faults.malformed) {
    ctx.res.write('data: {"id": "broken", "choices": [\n\n');
    return w.end();
  }
  const usageOnFinal = ctx.provider !== 'openai' && !faults.omitUsage;
  if (!(await w.write(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finish }], usageOnFinal ? { usage } : {})))) return;
  if (ctx.provider === 'openai' && b.stream_options?.include_usage && !faults.omitUsage) {
    if (!(await w.write(chunk([], { usage })))) return;
  }
  if (!(await w.write('[DONE]'))) return;
  w.end();
}

// ---------------------------------------------------------------- OpenAI Responses API

/**
 * `POST /v1/responses`, sync and streamed (the event sequence the official SDK consumes). An
 * answer is one output item: a message, or a `function_call` when the request's tools ask for one
 * (its arguments streamed as `response.function_call_arguments.delta` pieces).
 */
async function responses(ctx: Ctx, faults: Faults) {
  const b = ctx.body;
  if (!b?.model) throw new HttpFail(400, 'Missing required parameter: \'model\'.');
  if (b.input === undefined) throw new HttpFail(400, 'Missing required parameter: \'input\'.');
  const texts = providerModules.openai.inspectableText(b);
  const last = typeof b.input === 'string' ? b.input : texts[texts.length - 1] ?? '';
  const seed = JSON.stringify(b.input);
  const tool = responsesToolCall(b);
  const schema = tool ? null : responsesSchema(b);
  const reply = schema ? { text: JSON.stringify(valueFor(schema, seed)), truncated: false } : replyFor(last, b.max_output_tokens, faults.fillOutput);
  const truncated = !tool && reply.truncated;
  const text = tool ? '' : reply.text;
  const id = `resp_${hashHex(JSON.stringify(b)).slice(0, 24)}`;
  const msgId = `msg_${hashHex(`${id}:message`).slice(0, 24)}`;
  const call = tool ? { id: `fc_${hashHex(`${id}:call`).slice(0, 24)}`, call_id: toolCallId('call_', seed), name: tool.name, arguments: JSON.stringify(valueFor(tool.parameters, seed)) } : null;
  const inputTokens = countChatTokens(texts);
  const outputTokens = call ? countTokens(call.arguments) : outputTokensOf(text, b.max_output_tokens);
  const cached = Math.min(faults.cachedTokens, inputTokens);
  const created = now();
  const usage = {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: cached },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
  };
  const part = (t: string) => ({ type: 'output_text', text: t, annotations: [] });
  const message = (t: string, status: string) => ({ type: 'message', id: msgId, status, role: 'assistant', content: t === '' && status !== 'completed' ? [] : [part(t)] });
  const callItem = (args: string, status: string) => ({ type: 'function_call', id: call!.id, call_id: call!.call_id, name: call!.name, arguments: args, status });
  const done = call ? callItem(call.arguments, 'completed') : message(text, 'completed');
  const response = (status: string, output: unknown[], withUsage: boolean) => ({
    id,
    object: 'response',
    created_at: created,
    status,
    error: null,
    incomplete_details: truncated && status !== 'in_progress' ? { reason: 'max_output_tokens' } : null,
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    model: b.model,
    output,
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    previous_response_id: b.previous_response_id ?? null,
    temperature: b.temperature ?? 1,
    top_p: b.top_p ?? 1,
    tool_choice: b.tool_choice ?? 'auto',
    tools: Array.isArray(b.tools) ? b.tools : [],
    text: b.text?.format ? { format: b.text.format } : { format: { type: 'text' } },
    usage: withUsage && !faults.omitUsage ? usage : null,
    metadata: b.metadata ?? {},
  });
  const finalStatus = truncated ? 'incomplete' : 'completed';
  if (!b.stream) return sendJson(ctx.res, 200, response(finalStatus, [done], true));
  const w = sseWriter(ctx, faults);
  let seq = 0;
  const send = (type: string, data: Record<string, unknown>) => w.write(JSON.stringify({ type, sequence_number: seq++, ...data }), type);
  if (!(await send('response.created', { response: response('in_progress', [], false) }))) return;
  if (!(await send('response.in_progress', { response: response('in_progress', [], false) }))) return;
  if (call) {
    // The call's name first, then its arguments in pieces, as the Responses stream carries them.
    if (!(await send('response.output_item.added', { output_index: 0, item: callItem('', 'in_progress') }))) return;
    for (const piece of slices(call.arguments)) {
      if (!(await send('response.function_call_arguments.delta', { item_id: call.id, output_index: 0, delta: piece }))) return;
    }
  } else {
    if (!(await send('response.output_item.added', { output_index: 0, item: message('', 'in_progress') }))) return;
    if (!(await send('response.content_part.added', { item_id: msgId, output_index: 0, content_index: 0, part: part('') }))) return;
    for (const piece of chunksOf(text)) {
      if (!(await send('response.output_text.delta', { item_id: msgId, output_index: 0, content_index: 0, delta: piece, logprobs: [] }))) return;
    }
  }
  if (faults.malformed) {
    ctx.res.write('event: response.output_text.done\ndata: {"type": "response.output_text.done", \n\n');
    return w.end();
  }
  if (call) {
    if (!(await send('response.function_call_arguments.done', { item_id: call.id, output_index: 0, name: call.name, arguments: call.arguments }))) return;
  } else {
    if (!(await send('response.output_text.done', { item_id: msgId, output_index: 0, content_index: 0, text, logprobs: [] }))) return;
    if (!(await send('response.content_part.done', { item_id: msgId, output_index: 0, content_index: 0, part: part(text) }))) return;
  }
  if (!(await send('response.output_item.done', { output_index: 0, item: done }))) return;
  if (!(await send(`response.${finalStatus}`, { response: response(finalStatus, [done], true) }))) return;
  w.end();
}

function embeddings(ctx: Ctx, faults: Faults) {
  const b = ctx.body;
  if (!b?.model) throw new HttpFail(400, 'you must provide a model parameter');
  const inputs: string[] = typeof b.input === 'string' ? [b.input] : Array.isArray(b.input) ? b.input.map(String) : [];
  if (!inputs.length) throw new HttpFail(400, "'input' must be a string or a non-empty array of strings");
  const dims = Number(b.dimensions ?? b.output_dimension ?? 16) || 16;
  const base64 = b.encoding_format === 'base64';
  const tokens = inputs.reduce((n, t) => n + countTokens(t), 0);
  const usage = ctx.provider === 'mistral' ? { prompt_tokens: tokens, completion_tokens: 0, total_tokens: tokens } : { prompt_tokens: tokens, total_tokens: tokens };
  sendJson(ctx.res, 200, {
    ...(ctx.provider === 'mistral' ? { id: `emb-${hashHex(inputs.join('\n')).slice(0, 16)}` } : {}),
    object: 'list',
    data: inputs.map((t, index) => {
      const v = embeddingFor(t, dims);
      return { object: 'embedding', index, embedding: base64 ? embeddingBase64(v) : v };
    }),
    model: b.model,
    ...(faults.omitUsage ? {} : { usage }),
  });
}

// ---------------------------------------------------------------- OpenAI media

function images(ctx: Ctx, faults: Faults) {
  const b = ctx.body;
  if (typeof b?.prompt !== 'string' || !b.prompt) throw new HttpFail(400, "'prompt' is required");
  const model = b.model ?? 'dall-e-2';
  const n = Math.max(1, Math.min(10, Number(b.n ?? 1)));
  const asUrl = b.response_format === 'url' || (b.response_format === undefined && String(model).startsWith('dall-e'));
  const png = pngFor(b.prompt);
  const id = hashHex(b.prompt).slice(0, 16);
  const data = Array.from({ length: n }, (_, i) =>
    asUrl ? { url: `${ctx.baseUrl}/assets/image/${id}-${i}.png`, revised_prompt: b.prompt } : { b64_json: png.toString('base64') },
  );
  const input = countTokens(b.prompt);
  const usage = String(model).startsWith('gpt-image')
    ? { input_tokens: input, output_tokens: 272 * n, total_tokens: input + 272 * n, input_tokens_details: { text_tokens: input, image_tokens: 0 } }
    : undefined;
  sendJson(ctx.res, 200, { created: now(), data, ...(usage && !faults.omitUsage ? { usage, output_format: 'png' } : {}) });
}

const AUDIO_TYPES: Record<string, string> = { mp3: 'audio/mpeg', wav: 'audio/wav', opus: 'audio/ogg', aac: 'audio/aac', flac: 'audio/flac', pcm: 'audio/pcm' };

function speech(ctx: Ctx) {
  const b = ctx.body;
  if (typeof b?.input !== 'string' || !b.input) throw new HttpFail(400, "'input' is required");
  if (!b.voice) throw new HttpFail(400, "'voice' is required");
  const audio = audioFor(`${b.voice}:${b.input}`);
  ctx.res.writeHead(200, { 'content-type': AUDIO_TYPES[b.response_format ?? 'mp3'] ?? 'audio/mpeg', 'content-length': audio.length });
  ctx.res.end(audio);
}

async function transcriptions(ctx: Ctx, faults: Faults) {
  const form = ctx.body as FormData;
  if (!(form instanceof FormData)) throw new HttpFail(400, 'expected multipart/form-data');
  const file = form.get('file');
  const model = form.get('model');
  if (!file || typeof file === 'string') throw new HttpFail(400, "'file' is required");
  if (!model) throw new HttpFail(400, "'model' is required");
  const data = Buffer.from(await (file as Blob).arrayBuffer());
  const text = transcriptOf(data, (file).name ?? 'audio');
  const seconds = audioSecondsOf(data);
  const rf = form.get('response_format');
  const format = typeof rf === 'string' ? rf : 'json';
  const usage = (typeof model === 'string' ? model : '').startsWith('whisper')
    ? { type: 'duration', seconds }
    : { type: 'tokens', input_tokens: seconds * 10, output_tokens: countTokens(text), total_tokens: seconds * 10 + countTokens(text), input_token_details: { text_tokens: 0, audio_tokens: seconds * 10 } };
  if (format === 'text') {
    ctx.res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    return ctx.res.end(text);
  }
  const extra = format === 'verbose_json' ? { task: 'transcribe', language: 'english', duration: seconds, segments: [] } : {};
  sendJson(ctx.res, 200, { ...extra, text, ...(faults.omitUsage ? {} : { usage }) });
}

// ---------------------------------------------------------------- Anthropic

async function anthropicMessages(ctx: Ctx, faults: Faults) {
  const b = ctx.body;
  if (!b?.model) throw new HttpFail(400, 'model: Field required');
  if (typeof b.max_tokens !== 'number') throw new HttpFail(400, 'max_tokens: Field required');
  if (!Array.isArray(b.messages) || !b.messages.length) throw new HttpFail(400, 'messages: Field required');
  const texts = providerModules.anthropic.inspectableText(b);
  const lastUser = [...b.messages].reverse().find((m: any) => m?.role === 'user');
  const last = lastUser ? providerModules.anthropic.inspectableText({ messages: [lastUser] }).join('\n') : texts.join('\n');
  const seed = JSON.stringify(b.messages);
  const tool = anthropicToolCall(b);
  const schema = tool ? null : anthropicResponseSchema(b);
  const { text, truncated } = schema ? { text: JSON.stringify(valueFor(schema, seed)), truncated: false } : replyFor(last, b.max_tokens, faults.fillOutput);
  const toolUse = tool ? { type: 'tool_use', id: toolCallId('toolu_', seed), name: tool.name, input: valueFor(tool.parameters, seed) as Record<string, unknown> } : null;
  const toolJson = toolUse ? JSON.stringify(toolUse.input) : '';
  const total = countChatTokens(texts);
  const cached = Math.min(faults.cachedTokens, total);
  const usage = { input_tokens: total - cached, cache_creation_input_tokens: 0, cache_read_input_tokens: cached, output_tokens: toolUse ? countTokens(toolJson) : outputTokensOf(text, b.max_tokens), service_tier: 'standard' };
  const id = `msg_${hashHex(JSON.stringify(b)).slice(0, 24)}`;
  const stop = toolUse ? 'tool_use' : truncated ? 'max_tokens' : 'end_turn';
  if (!b.stream) {
    return sendJson(ctx.res, 200, {
      id, type: 'message', role: 'assistant', model: b.model, content: [toolUse ?? { type: 'text', text }],
      stop_reason: stop, stop_sequence: null, ...(faults.omitUsage ? {} : { usage }),
    });
  }
  const w = sseWriter(ctx, faults);
  const ev = async (type: string, data: Record<string, unknown>) => w.write(JSON.stringify({ type, ...data }), type);
  const startUsage = faults.omitUsage ? {} : { usage: { ...usage, output_tokens: 1 } };
  if (!(await ev('message_start', { message: { id, type: 'message', role: 'assistant', model: b.model, content: [], stop_reason: null, stop_sequence: null, ...startUsage } }))) return;
  if (!(await ev('content_block_start', { index: 0, content_block: toolUse ? { ...toolUse, input: {} } : { type: 'text', text: '' } }))) return;
  if (!(await ev('ping', {}))) return;
  for (const piece of toolUse ? slices(toolJson) : []) {
    if (!(await ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: piece } }))) return;
  }
  for (const piece of toolUse ? [] : chunksOf(text)) {
    if (!(await ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: piece } }))) return;
  }
  if (faults.malformed) {
    ctx.res.write('event: content_block_stop\ndata: {"type": "content_block_st\n\n');
    return w.end();
  }
  if (!(await ev('content_block_stop', { index: 0 }))) return;
  const deltaUsage = faults.omitUsage ? {} : { usage: { output_tokens: usage.output_tokens } };
  if (!(await ev('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, ...deltaUsage }))) return;
  if (!(await ev('message_stop', {}))) return;
  w.end();
}

// ---------------------------------------------------------------- Google

function googleTexts(body: any): { texts: string[]; last: string; fileParts: string[] } {
  const texts = providerModules.google.inspectableText(body);
  const contents = Array.isArray(body?.contents) ? body.contents : [];
  const lastUser = [...contents].reverse().find((c: any) => (c?.role ?? 'user') === 'user');
  const parts = Array.isArray(lastUser?.parts) ? lastUser.parts : [];
  const fileParts = parts.filter((p: any) => p?.fileData || p?.inlineData).map((p: any) => (p.fileData ? `${p.fileData.mimeType} ${p.fileData.fileUri}` : `${p.inlineData.mimeType} inline`));
  const last = parts.filter((p: any) => typeof p?.text === 'string').map((p: any) => p.text).join('\n');
  return { texts, last: [last, ...fileParts].filter(Boolean).join(' '), fileParts };
}

async function googleGenerate(ctx: Ctx, faults: Faults, model: string, stream: boolean) {
  const b = ctx.body;
  if (!Array.isArray(b?.contents) || !b.contents.length) throw new HttpFail(400, '* GenerateContentRequest.contents: contents is not specified');
  const { texts, last, fileParts } = googleTexts(b);
  const seed = JSON.stringify(b.contents);
  const tool = googleToolCall(b);
  const schema = tool ? null : googleResponseSchema(b);
  const { text, truncated } = schema ? { text: JSON.stringify(valueFor(schema, seed)), truncated: false } : replyFor(last, b.generationConfig?.maxOutputTokens, faults.fillOutput);
  const functionCall = tool ? { name: tool.name, args: valueFor(tool.parameters, seed) } : null;
  const prompt = countChatTokens(texts) + fileParts.length * 258;
  const output = functionCall ? countTokens(JSON.stringify(functionCall.args)) : outputTokensOf(text, b.generationConfig?.maxOutputTokens);
  const cached = Math.min(faults.cachedTokens, prompt);
  const usageMetadata = {
    promptTokenCount: prompt,
    candidatesTokenCount: output,
    totalTokenCount: prompt + output,
    ...(cached ? { cachedContentTokenCount: cached } : {}),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  };
  const finishReason = truncated ? 'MAX_TOKENS' : 'STOP';
  const responseId = hashHex(JSON.stringify(b)).slice(0, 20);
  const candidate = (t: string, finish?: string) => ({ content: { parts: [functionCall ? { functionCall } : { text: t }], role: 'model' }, ...(finish ? { finishReason: finish } : {}), index: 0 });
  if (!stream) {
    return sendJson(ctx.res, 200, {
      candidates: [candidate(text, finishReason)],
      ...(faults.omitUsage ? {} : { usageMetadata }),
      modelVersion: model,
      responseId,
    });
  }
  const w = sseWriter(ctx, faults);
  // A function call arrives whole in one chunk, as Gemini streams it.
  const pieces = functionCall ? [''] : chunksOf(text);
  for (let i = 0; i < pieces.length; i++) {
    const final = i === pieces.length - 1;
    if (final && faults.malformed) {
      ctx.res.write('data: {"candidates": [{"content": \r\n\r\n');
      return w.end();
    }
    const usage = faults.omitUsage ? {} : { usageMetadata: final ? usageMetadata : { promptTokenCount: prompt, totalTokenCount: prompt } };
    if (!(await w.write(JSON.stringify({ candidates: [candidate(pieces[i], final ? finishReason : undefined)], ...usage, modelVersion: model, responseId })))) return;
  }
  w.end();
}

function googleEmbed(ctx: Ctx, model: string, batch: boolean) {
  const b = ctx.body;
  const textOf = (c: any) => (Array.isArray(c?.parts) ? c.parts.map((p: any) => p?.text ?? '').join('\n') : '');
  if (batch) {
    if (!Array.isArray(b?.requests) || !b.requests.length) throw new HttpFail(400, '* BatchEmbedContentsRequest.requests: requests is not specified');
    return sendJson(ctx.res, 200, { embeddings: b.requests.map((r: any) => ({ values: embeddingFor(textOf(r.content), r.outputDimensionality ?? 16) })) });
  }
  if (!b?.content) throw new HttpFail(400, '* EmbedContentRequest.content: content is not specified');
  void model;
  sendJson(ctx.res, 200, { embedding: { values: embeddingFor(textOf(b.content), b.outputDimensionality ?? 16) } });
}

// ---------------------------------------------------------------- routing

async function route(ctx: Ctx, faults: Faults): Promise<unknown> {
  const { provider, path } = ctx;
  const p = provider === 'deepseek' ? path.replace(/^\/v1(?=\/)/, '') : path;
  if (provider === 'openai' || provider === 'deepseek' || provider === 'mistral') {
    const chatPath = provider === 'deepseek' ? '/chat/completions' : '/v1/chat/completions';
    if (p === chatPath) return chat(ctx, faults);
    if (provider !== 'deepseek' && p === '/v1/embeddings') return embeddings(ctx, faults);
    if (provider === 'openai' && p === '/v1/images/generations') return images(ctx, faults);
    if (provider === 'openai' && p === '/v1/audio/speech') return speech(ctx);
    if (provider === 'openai' && p === '/v1/audio/transcriptions') return transcriptions(ctx, faults);
    if (provider === 'openai' && p === '/v1/responses') return responses(ctx, faults);
  }
  if (provider === 'anthropic' && p === '/v1/messages') return anthropicMessages(ctx, faults);
  if (provider === 'google') {
    const m = /^\/(v1beta|v1)\/models\/([^:]+):(generateContent|streamGenerateContent|embedContent|batchEmbedContents)$/.exec(p);
    if (m) {
      const model = decodeURIComponent(m[2]);
      if (m[3] === 'generateContent') return googleGenerate(ctx, faults, model, false);
      if (m[3] === 'streamGenerateContent') return googleGenerate(ctx, faults, model, true);
      return googleEmbed(ctx, model, m[3] === 'batchEmbedContents');
    }
  }
  throw new HttpFail(404, `Unknown route ${ctx.req.method} ${path}`);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** One provider request as the emulator received it (tests check what Tollgate sent upstream). */
export interface ReceivedRequest {
  provider: ProviderId;
  path: string;
  /** The parsed JSON body (null for multipart or unparseable bodies). */
  body: unknown;
  /** W3C trace context the caller propagated (tracing tests), null when none. */
  traceparent: string | null;
}

async function handle(req: IncomingMessage, res: ServerResponse, baseUrl: () => string, received: (r: ReceivedRequest) => void) {
  const url = new URL(req.url ?? '/', 'http://emulator');
  if (req.method === 'GET' && url.pathname === '/health') return sendJson(res, 200, { status: 'ok', providers: Object.keys(providerModules) });
  if (req.method === 'GET' && url.pathname.startsWith('/assets/')) {
    // Test assets: /assets/image/<id>.png (generated images), /assets/echo?text=...&type=... (any bytes).
    if (url.pathname.startsWith('/assets/image/')) {
      const png = pngFor(url.pathname);
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
      return res.end(png);
    }
    const data = Buffer.from(url.searchParams.get('text') ?? '', 'utf8');
    res.writeHead(200, { 'content-type': url.searchParams.get('type') ?? 'application/octet-stream', 'content-length': data.length });
    return res.end(data);
  }
  if (await handlePayments(req, res, url, baseUrl())) return;
  const m = /^\/(openai|anthropic|google|deepseek|mistral)(\/.*)$/.exec(url.pathname);
  if (!m) return sendJson(res, 404, { error: { message: `no emulated provider at ${url.pathname}` } });
  const ctx: Ctx = { req, res, provider: m[1] as ProviderId, path: m[2].replace(/\/+$/, ''), query: url.searchParams, raw: Buffer.alloc(0), body: null, baseUrl: baseUrl() };
  try {
    if (req.method !== 'POST' && req.method !== 'GET') throw new HttpFail(404, `Unknown route ${req.method} ${ctx.path}`);
    ctx.raw = req.method === 'POST' ? await readBody(req) : Buffer.alloc(0);
    if (!hasKey(ctx)) {
      const msg = ctx.provider === 'google' ? 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.' : 'Missing API key';
      return sendError(ctx, 401, ctx.provider === 'anthropic' ? 'x-api-key header is required' : msg);
    }
    // Read-only routes: model lists and details, token counting (src/emulator/models.ts).
    let readBodyJson: Record<string, unknown> | null = null;
    if (req.method === 'POST' && ctx.raw.length) {
      try {
        readBodyJson = JSON.parse(ctx.raw.toString('utf8')) as Record<string, unknown>;
      } catch {
        readBodyJson = null;
      }
    }
    const read = readRoute(ctx.provider, req.method, ctx.path, readBodyJson);
    if (read) {
      if (read.status === 404) return sendError(ctx, 404, `The model \`${ctx.path.split('/').pop()}\` does not exist`);
      return sendJson(res, read.status, read.body);
    }
    if (req.method !== 'POST') throw new HttpFail(404, `Unknown route ${req.method} ${ctx.path}`);
    const ct = String(req.headers['content-type'] ?? '');
    if (ct.startsWith('multipart/form-data')) {
      ctx.body = await new Response(ctx.raw, { headers: { 'content-type': ct } }).formData();
    } else {
      try {
        ctx.body = ctx.raw.length ? JSON.parse(ctx.raw.toString('utf8')) : {};
      } catch {
        throw new HttpFail(400, 'We could not parse the JSON body of your request.');
      }
    }
    received({ provider: ctx.provider, path: ctx.path, body: ctx.body instanceof FormData ? null : ctx.body, traceparent: typeof req.headers.traceparent === 'string' ? req.headers.traceparent : null });
    const faults = parseFaults(req.headers, textsOf(ctx));
    if (faults.latencyMs) await delay(ctx, faults.latencyMs);
    if (faults.status && faults.status >= 400) {
      const msg = faults.status === 429 ? 'Rate limit exceeded (emulated)' : faults.status === 529 ? 'Overloaded' : `Emulated error ${faults.status}`;
      return sendError(ctx, faults.status, msg, faults);
    }
    const streaming = ctx.body?.stream === true || ctx.path.endsWith(':streamGenerateContent');
    if (faults.malformed && !streaming) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end('{"id": "emulated", "choices": [{"message": ');
    }
    if (!streaming && faults.ttftMs) await delay(ctx, faults.ttftMs);
    await route(ctx, faults);
  } catch (err) {
    if (res.headersSent || ctx.hangUp?.aborted) {
      res.destroy();
      return;
    }
    if (err instanceof HttpFail) return sendError(ctx, err.status, err.message);
    sendError(ctx, 500, 'emulator internal error');
  }
}

export interface EmulatorHandle {
  url: string;
  /** Requests received so far (tests count provider calls with it). */
  requestCount(): number;
  /** Requests whose handling has not ended (waiting out a delay, or streaming). */
  inProgress(): number;
  /** The last RECEIVED_LOG_SIZE governed provider requests (POST bodies), oldest first. */
  received(): ReceivedRequest[];
  close(): Promise<void>;
}

const RECEIVED_LOG_SIZE = 2000;

export async function startEmulator(opts: { port?: number; host?: string } = {}): Promise<EmulatorHandle> {
  const host = opts.host ?? '127.0.0.1';
  let url = '';
  let requests = 0;
  let inProgress = 0;
  const log: ReceivedRequest[] = [];
  const server = http.createServer((req, res) => {
    requests += 1;
    inProgress += 1;
    handle(req, res, () => url, (r) => {
      log.push(r);
      if (log.length > RECEIVED_LOG_SIZE) log.shift();
    })
      .catch(() => res.destroy())
      .finally(() => (inProgress -= 1));
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  url = `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${addr.port}`;
  return {
    url,
    requestCount: () => requests,
    inProgress: () => inProgress,
    received: () => [...log],
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
