/**
 * Cross-provider routing on the openai and anthropic proxies: the caller's native chat request is
 * translated to the provider-neutral request (the /v1/execute translation), dispatched through the
 * target provider's module (its normalized request transform and response parser), and the result
 * is rendered back as a native response of the caller's provider. Text chat only, non-stream.
 */
import { randomBytes } from 'node:crypto';
import type { ProviderId } from '../config';
import type { NormalizedRequest, ProviderResult } from '../providers/types';
import type { Target } from '../executions/types';
import type { ProxyCall } from './infer';

export function translatedRequest(call: ProxyCall, target: Target): NormalizedRequest {
  const r = call.request;
  const req: NormalizedRequest = { operation: r.operation, provider: target.provider, model: target.model, stream: false };
  if (r.messages) req.messages = r.messages;
  if (r.inputs) req.inputs = r.inputs;
  if (r.parameters) req.parameters = r.parameters;
  return req;
}

const OPENAI_FINISH: Record<string, string> = { end_turn: 'stop', stop_sequence: 'stop', max_tokens: 'length', tool_use: 'tool_calls' };
const ANTHROPIC_STOP: Record<string, string> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', content_filter: 'refusal' };

const text = (r: ProviderResult) => r.output.content.map((c) => c.text).join('');

/** A ProviderResult as a native response body of `caller`'s chat endpoint. */
export function renderNative(caller: ProviderId, target: Target, r: ProviderResult, nowSeconds: number): Record<string, unknown> {
  const model = r.provider_model ?? target.model;
  if (caller === 'anthropic') {
    return {
      id: `msg_${randomBytes(12).toString('hex')}`,
      type: 'message',
      role: 'assistant',
      model,
      content: [{ type: 'text', text: text(r) }],
      stop_reason: r.finish_reason ? ANTHROPIC_STOP[r.finish_reason] ?? r.finish_reason : 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: r.usage.input_tokens, output_tokens: r.usage.output_tokens },
    };
  }
  return {
    id: `chatcmpl-${randomBytes(12).toString('hex')}`,
    object: 'chat.completion',
    created: nowSeconds,
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text(r), refusal: null },
        logprobs: null,
        finish_reason: r.finish_reason ? OPENAI_FINISH[r.finish_reason] ?? r.finish_reason : 'stop',
      },
    ],
    usage: { prompt_tokens: r.usage.input_tokens, completion_tokens: r.usage.output_tokens, total_tokens: r.usage.total_tokens },
  };
}
