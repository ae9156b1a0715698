/**
 * The deepseek provider module: OpenAI-shaped chat at `/chat/completions` (DeepSeek's documented
 * path; `/v1/chat/completions` is an alias). Usage adds `prompt_cache_hit_tokens` (cached input)
 * and `completion_tokens_details.reasoning_tokens` (deepseek-reasoner); errors are OpenAI-shaped.
 */
import { openAICompatModule } from '../shared/openai-compat-module';
import { openAIErrorBody } from '../shared/openai-compat';
import { mapOpenAIError } from '../openai/errors';

export const deepseek = openAICompatModule({
  id: 'deepseek',
  chatPath: '/chat/completions',
  flavor: { maxTokensField: 'max_tokens', streamUsageOption: true },
  mapError: mapOpenAIError,
  errorBody: openAIErrorBody,
});
