/** The openai provider module. */
import type { ProviderModule } from '../shared/module';
import { chatInspectableText, chatStreamUsage, createChatStreamParser, openAIErrorBody } from '../shared/openai-compat';
import { mapOpenAIError } from './errors';
import { buildOpenAIRequest } from './request';
import { extractOpenAIUsage, parseOpenAIResponse } from './response';

export const openai: ProviderModule = {
  id: 'openai',
  authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  buildRequest: buildOpenAIRequest,
  parseResponse: parseOpenAIResponse,
  createStreamParser: () => createChatStreamParser(),
  mapError: mapOpenAIError,
  errorBody: openAIErrorBody,
  extractUsageFromNative: extractOpenAIUsage,
  extractStreamUsage: chatStreamUsage,
  inspectableText: chatInspectableText,
};
