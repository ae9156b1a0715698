/** The anthropic provider module (Messages API). */
import type { ProviderModule } from '../shared/module';
import { anthropicErrorBody, mapAnthropicError } from './errors';
import { anthropicInspectableItems, anthropicInspectableText, anthropicRequestTools, buildAnthropicRequest } from './request';
import { anthropicAnswer, extractAnthropicUsage, parseAnthropicResponse } from './response';
import { createAnthropicStreamParser, extractAnthropicStreamUsage } from './stream';

export const anthropic: ProviderModule = {
  id: 'anthropic',
  authHeaders: (apiKey) => ({ 'x-api-key': apiKey }),
  buildRequest: buildAnthropicRequest,
  parseResponse: parseAnthropicResponse,
  createStreamParser: () => createAnthropicStreamParser(),
  mapError: mapAnthropicError,
  errorBody: anthropicErrorBody,
  extractUsageFromNative: extractAnthropicUsage,
  extractStreamUsage: extractAnthropicStreamUsage,
  answerOfNative: anthropicAnswer,
  requestTools: anthropicRequestTools,
  inspectableText: anthropicInspectableText,
  inspectableItems: anthropicInspectableItems,
};
