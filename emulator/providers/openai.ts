/**
 * OpenAI's API (`/openai/...`): chat completions and embeddings (./shared/openai-compat.ts), the
 * Responses API, image generation, speech and transcriptions.
 */
import { providerModules } from '../../src/providers';
import { countChatTokens, countTokens } from '../../src/pricing/tokenizer';
import { toolDefinitions, toolDefinitionTokens } from '../../src/providers/shared/tool-definitions';
import { audioFor, audioSecondsOf, chunksOf, hashHex, outputTokensOf, pngFor, replyFor, transcriptOf } from '../content';
import type { Faults } from '../faults';
import { HttpFail, now, sendJson, slices, sseWriter, unknownRoute, type Ctx, type ProviderRoutes } from '../http';
import { responsesSchema, responsesToolCall, toolCallId, valueFor } from '../structured';
import { chat, chatUsageBase, embeddings, type ChatDialect } from './shared/openai-compat';

const CHAT: ChatDialect = {
  idPrefix: 'chatcmpl-',
  usage: (input, output, cached) => ({
    ...chatUsageBase(input, output),
    prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  }),
  messageFields: { refusal: null, annotations: [] },
  systemFingerprint: true,
  streamUsage: 'on-request',
};

export const openaiRoutes: ProviderRoutes = async (ctx, faults) => {
  switch (ctx.path) {
    case '/v1/chat/completions':
      return chat(ctx, faults, CHAT);
    case '/v1/embeddings':
      return embeddings(ctx, faults, { usage: (tokens) => ({ prompt_tokens: tokens, total_tokens: tokens }) });
    case '/v1/images/generations':
      return images(ctx, faults);
    case '/v1/audio/speech':
      return speech(ctx);
    case '/v1/audio/transcriptions':
      return transcriptions(ctx, faults);
    case '/v1/responses':
      return responses(ctx, faults);
    default:
      throw unknownRoute(ctx);
  }
};

// ---------------------------------------------------------------- Responses API

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
  const inputTokens = countChatTokens(texts) + toolDefinitionTokens(toolDefinitions(b));
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

// ---------------------------------------------------------------- media

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
