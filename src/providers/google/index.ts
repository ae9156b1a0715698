/** The google (Gemini) provider module. */
import type { ProviderModule } from '../shared/module';
import { googleErrorBody, mapGoogleError } from './errors';
import { buildGoogleRequest, googleInspectableItems, googleInspectableText, googleRequestTools } from './request';
import { extractGoogleUsage, googleAnswer, parseGoogleResponse } from './response';
import { createGoogleStreamParser, extractGoogleStreamUsage } from './stream';

export const google: ProviderModule = {
  id: 'google',
  authHeaders: (apiKey) => ({ 'x-goog-api-key': apiKey }),
  buildRequest: buildGoogleRequest,
  parseResponse: parseGoogleResponse,
  createStreamParser: () => createGoogleStreamParser(),
  mapError: mapGoogleError,
  errorBody: googleErrorBody,
  extractUsageFromNative: extractGoogleUsage,
  extractStreamUsage: extractGoogleStreamUsage,
  answerOfNative: googleAnswer,
  requestTools: googleRequestTools,
  inspectableText: googleInspectableText,
  inspectableItems: googleInspectableItems,
};
