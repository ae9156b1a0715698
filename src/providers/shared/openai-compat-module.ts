/** A ProviderModule for an OpenAI-shaped provider (deepseek, mistral): chat and optional embeddings. */
import type { ProviderId, Usage } from '../types';
import { ProviderError } from '../types';
import { jsonCall, type ProviderModule } from './module';
import {
  buildChatBody,
  buildEmbeddingsBody,
  chatAnswer,
  chatInspectableItems,
  chatInspectableText,
  chatRequestTools,
  chatStreamUsage,
  createChatStreamParser,
  openAIUsageCounts,
  parseChatResponse,
  parseEmbeddingsResponse,
  refuse,
  type ChatFlavor,
} from './openai-compat';
import { makeUsage } from './usage';

export interface OpenAICompatSpec {
  id: ProviderId;
  chatPath: string;
  embeddingsPath?: string;
  flavor: ChatFlavor;
  mapError: ProviderModule['mapError'];
  errorBody: ProviderModule['errorBody'];
}

const norm = (p: string) => p.split('?')[0].replace(/\/+$/, '').replace(/^\/v1(?=\/)/, '');

export function openAICompatModule(spec: OpenAICompatSpec): ProviderModule {
  return {
    id: spec.id,
    authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
    async buildRequest(req) {
      if (req.operation === 'generate.text' || req.operation === 'understand.image') {
        return jsonCall(spec.chatPath, buildChatBody(req, spec.flavor), req.stream);
      }
      if (req.operation === 'embed.text' && spec.embeddingsPath) return jsonCall(spec.embeddingsPath, buildEmbeddingsBody(req), false);
      return refuse(`${req.operation} is not supported by ${spec.id}`);
    },
    parseResponse(_req, call, payload) {
      if (call.path === spec.chatPath) return parseChatResponse(payload);
      if (call.path === spec.embeddingsPath) return parseEmbeddingsResponse(payload);
      throw new ProviderError({ kind: 'malformed_response', status: null, retryable: false, message: `no response parser for ${call.path}` });
    },
    createStreamParser: () => createChatStreamParser(),
    mapError: spec.mapError,
    errorBody: spec.errorBody,
    extractUsageFromNative(path, body): Usage | null {
      const c = openAIUsageCounts((body as Record<string, unknown> | null)?.usage);
      if (!c) return null;
      return makeUsage(spec.embeddingsPath && norm(path) === norm(spec.embeddingsPath) ? { ...c, output_tokens: 0 } : c);
    },
    extractStreamUsage: chatStreamUsage,
    answerOfNative: (path, body) => (norm(path) === norm(spec.chatPath) ? chatAnswer(body) : null),
    requestTools: chatRequestTools,
    inspectableText: chatInspectableText,
    inspectableItems: chatInspectableItems,
  };
}
