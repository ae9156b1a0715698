/** Anthropic's Messages API (`/anthropic/v1/messages`), sync and streamed with `event:` lines. */
import { providerModules } from '../../src/providers';
import { countChatTokens, countTokens } from '../../src/pricing/tokenizer';
import { toolDefinitions, toolDefinitionTokens } from '../../src/providers/shared/tool-definitions';
import { chunksOf, hashHex, outputTokensOf, replyFor } from '../content';
import type { Faults } from '../faults';
import { HttpFail, sendJson, slices, sseWriter, unknownRoute, type Ctx, type ProviderRoutes } from '../http';
import { anthropicResponseSchema, anthropicToolCall, toolCallId, valueFor } from '../structured';

export const anthropicRoutes: ProviderRoutes = async (ctx, faults) => {
  if (ctx.path === '/v1/messages') return messages(ctx, faults);
  throw unknownRoute(ctx);
};

async function messages(ctx: Ctx, faults: Faults) {
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
  const total = countChatTokens(texts) + toolDefinitionTokens(toolDefinitions(b));
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
