/** Mistral's API (`/mistral/v1/...`): OpenAI-shaped chat completions and embeddings. */
import { hashHex } from '../content';
import { unknownRoute, type ProviderRoutes } from '../http';
import { chat, chatUsageBase, embeddings, type ChatDialect } from './shared/openai-compat';

const CHAT: ChatDialect = {
  idPrefix: '',
  usage: chatUsageBase,
  messageFields: { tool_calls: null, prefix: false },
  systemFingerprint: false,
  streamUsage: 'final-chunk',
};

export const mistralRoutes: ProviderRoutes = async (ctx, faults) => {
  if (ctx.path === '/v1/chat/completions') return chat(ctx, faults, CHAT);
  if (ctx.path === '/v1/embeddings') {
    return embeddings(ctx, faults, {
      id: (inputs) => `emb-${hashHex(inputs.join('\n')).slice(0, 16)}`,
      usage: (tokens) => ({ prompt_tokens: tokens, completion_tokens: 0, total_tokens: tokens }),
    });
  }
  throw unknownRoute(ctx);
};
