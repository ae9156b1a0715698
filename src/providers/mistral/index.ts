/**
 * The mistral provider module: OpenAI-shaped chat (text and `image_url` vision parts) and
 * embeddings under `/v1`. Mistral reports usage on the final stream chunk without asking, so no
 * `stream_options` is sent.
 */
import { openAICompatModule } from '../shared/openai-compat-module';
import { mapMistralError, mistralErrorBody } from './errors';

export const mistral = openAICompatModule({
  id: 'mistral',
  chatPath: '/v1/chat/completions',
  embeddingsPath: '/v1/embeddings',
  flavor: { maxTokensField: 'max_tokens', streamUsageOption: false },
  mapError: mapMistralError,
  errorBody: mistralErrorBody,
});
