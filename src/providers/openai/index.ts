/** The openai provider module. */
import type { ProviderModule } from '../shared/module';
import { chatAnswer, chatInspectableItems, chatInspectableText, chatRequestTools, chatStreamUsage, createChatStreamParser, openAIErrorBody } from '../shared/openai-compat';
import { mapOpenAIError } from './errors';
import { buildOpenAIRequest } from './request';
import { extractOpenAIUsage, parseOpenAIResponse } from './response';
import {
  createResponsesStreamParser,
  isResponsesBody,
  isResponsesEvent,
  responsesAnswer,
  responsesInspectableItems,
  responsesInspectableText,
  responsesRequestTools,
  responsesStreamUsage,
} from './responses';

const pathOf = (p: string) => p.split('?')[0].replace(/\/+$/, '').replace(/^\/v1(?=\/)/, '');

export const openai: ProviderModule = {
  id: 'openai',
  authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  buildRequest: buildOpenAIRequest,
  parseResponse: parseOpenAIResponse,
  // Chat completions and the Responses API share the openai proxy: each event says which it is.
  createStreamParser: () => {
    const chat = createChatStreamParser();
    const responses = createResponsesStreamParser();
    let isResponses: boolean | null = null;
    return {
      push(ev) {
        isResponses ??= isResponsesEvent(ev);
        return isResponses ? responses.push(ev) : chat.push(ev);
      },
      snapshot: () => (isResponses ? responses.snapshot() : chat.snapshot()),
    };
  },
  mapError: mapOpenAIError,
  errorBody: openAIErrorBody,
  extractUsageFromNative: extractOpenAIUsage,
  extractStreamUsage: (events) => (events.some(isResponsesEvent) ? responsesStreamUsage(events) : chatStreamUsage(events)),
  answerOfNative: (path, body) => (pathOf(path) === '/chat/completions' ? chatAnswer(body) : pathOf(path) === '/responses' ? responsesAnswer(body) : null),
  requestTools: (body) => (isResponsesBody(body) ? responsesRequestTools(body) : chatRequestTools(body)),
  inspectableText: (body) => (isResponsesBody(body) ? responsesInspectableText(body) : chatInspectableText(body)),
  inspectableItems: (body) => (isResponsesBody(body) ? responsesInspectableItems(body) : chatInspectableItems(body)),
};
