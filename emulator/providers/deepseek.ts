/** DeepSeek's API (`/deepseek/chat/completions`, also under `/v1`): OpenAI-shaped chat with cache-hit usage. */
import { unknownRoute, type ProviderRoutes } from '../http';
import { chat, chatUsageBase, type ChatDialect } from './shared/openai-compat';

const CHAT: ChatDialect = {
  idPrefix: '',
  usage: (input, output, cached) => ({ ...chatUsageBase(input, output), prompt_cache_hit_tokens: cached, prompt_cache_miss_tokens: input - cached }),
  messageFields: {},
  systemFingerprint: true,
  streamUsage: 'final-chunk',
};

export const deepseekRoutes: ProviderRoutes = async (ctx, faults) => {
  // DeepSeek serves its API at the root and under /v1 alike.
  if (ctx.path.replace(/^\/v1(?=\/)/, '') === '/chat/completions') return chat(ctx, faults, CHAT);
  throw unknownRoute(ctx);
};
