/**
 * The OpenAI-shaped chat completions and embeddings that openai, deepseek and mistral all serve.
 * Where their wire formats differ (usage fields, message fields, where streamed usage goes), each
 * provider's module passes its dialect.
 */
import { providerModules } from '../../../src/providers';
import { countChatTokens, countTokens } from '../../../src/pricing/tokenizer';
import { toolDefinitions, toolDefinitionTokens } from '../../../src/providers/shared/tool-definitions';
import { chunksOf, embeddingBase64, embeddingFor, hashHex, outputTokensOf, replyFor } from '../../content';
import type { Faults } from '../../faults';
import { HttpFail, now, sendJson, slices, sseWriter, type Ctx } from '../../http';
import { openaiResponseSchema, openaiToolCall, toolCallId, valueFor } from '../../structured';

export interface ChatDialect {
  /** Prefix of the completion id (`chatcmpl-` on OpenAI). */
  idPrefix: string;
  /** The usage object for these token counts. */
  usage(input: number, output: number, cached: number): Record<string, unknown>;
  /** Fields the provider adds to the answer's message. */
  messageFields: Record<string, unknown>;
  /** Whether bodies and chunks carry `system_fingerprint`. */
  systemFingerprint: boolean;
  /**
   * Where a stream's usage goes: on the final chunk (deepseek, mistral), or in a chunk of its own
   * after it when the request sets `stream_options.include_usage` (openai).
   */
  streamUsage: 'final-chunk' | 'on-request';
}

/** The usage every OpenAI-shaped provider reports; dialects add their fields to it. */
export const chatUsageBase = (input: number, output: number) => ({ prompt_tokens: input, completion_tokens: output, total_tokens: input + output });

function chatPrompt(body: any): { texts: string[]; last: string } {
  const texts = providerModules.openai.inspectableText(body);
  const users = (Array.isArray(body?.messages) ? body.messages : []).filter((m: any) => m?.role === 'user');
  const lastUser = users[users.length - 1];
  const last = lastUser ? providerModules.openai.inspectableText({ messages: [lastUser] }).join('\n') : texts.join('\n');
  return { texts, last };
}

export async function chat(ctx: Ctx, faults: Faults, dialect: ChatDialect) {
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
  const input = countChatTokens(texts) + toolDefinitionTokens(toolDefinitions(b));
  const output = toolCall ? countTokens(toolCall.function.arguments) : outputTokensOf(text, maxTokens);
  const cached = Math.min(faults.cachedTokens, input);
  const usage = dialect.usage(input, output, cached);
  const id = `${dialect.idPrefix}${hashHex(JSON.stringify(b)).slice(0, 24)}`;
  const finish = toolCall ? 'tool_calls' : truncated ? 'length' : 'stop';
  const created = now();
  const fingerprint = dialect.systemFingerprint ? { system_fingerprint: 'fp_emulator' } : {};
  if (!b.stream) {
    const message: Record<string, unknown> = { role: 'assistant', content: toolCall ? null : text };
    Object.assign(message, dialect.messageFields);
    if (toolCall) message.tool_calls = [toolCall];
    return sendJson(ctx.res, 200, {
      id,
      object: 'chat.completion',
      created,
      model: b.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
      ...(faults.omitUsage ? {} : { usage }),
      ...fingerprint,
    });
  }
  const w = sseWriter(ctx, faults);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    JSON.stringify({ id, object: 'chat.completion.chunk', created, model: b.model, ...fingerprint, choices, ...extra });
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
  const usageOnFinal = dialect.streamUsage === 'final-chunk' && !faults.omitUsage;
  if (!(await w.write(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finish }], usageOnFinal ? { usage } : {})))) return;
  if (dialect.streamUsage === 'on-request' && b.stream_options?.include_usage && !faults.omitUsage) {
    if (!(await w.write(chunk([], { usage })))) return;
  }
  if (!(await w.write('[DONE]'))) return;
  w.end();
}

export interface EmbeddingsDialect {
  /** The list's `id`, when the provider sends one. */
  id?: (inputs: string[]) => string;
  usage(tokens: number): Record<string, unknown>;
}

export function embeddings(ctx: Ctx, faults: Faults, dialect: EmbeddingsDialect) {
  const b = ctx.body;
  if (!b?.model) throw new HttpFail(400, 'you must provide a model parameter');
  const inputs: string[] = typeof b.input === 'string' ? [b.input] : Array.isArray(b.input) ? b.input.map(String) : [];
  if (!inputs.length) throw new HttpFail(400, "'input' must be a string or a non-empty array of strings");
  const dims = Number(b.dimensions ?? b.output_dimension ?? 16) || 16;
  const base64 = b.encoding_format === 'base64';
  const tokens = inputs.reduce((n, t) => n + countTokens(t), 0);
  sendJson(ctx.res, 200, {
    ...(dialect.id ? { id: dialect.id(inputs) } : {}),
    object: 'list',
    data: inputs.map((t, index) => {
      const v = embeddingFor(t, dims);
      return { object: 'embedding', index, embedding: base64 ? embeddingBase64(v) : v };
    }),
    model: b.model,
    ...(faults.omitUsage ? {} : { usage: dialect.usage(tokens) }),
  });
}
