/** Authentication on the proxies: the project API key where each provider's SDK puts its own key. */
import type { ParameterizedContext } from 'koa';
import type { AuthContext } from '../../auth-context';
import type { ProviderId } from '../../config';
import { ProxyError } from '../../proxy/native-errors';
import { ApiError } from '../errors';
import type { KeyLookup } from '../key-cache';
import { authenticate, authOf, type KeyExtractor } from '../middleware/auth';

export const bearer = (ctx: ParameterizedContext): string | null => {
  const h = ctx.get('authorization');
  if (!h) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1] : '';
};

export const PROXY_KEY_EXTRACTORS: Record<ProviderId, KeyExtractor> = {
  openai: bearer,
  deepseek: bearer,
  mistral: bearer,
  anthropic: (ctx) => ctx.get('x-api-key') || bearer(ctx),
  google: (ctx) => ctx.get('x-goog-api-key') || (typeof ctx.query.key === 'string' && ctx.query.key) || bearer(ctx),
};

export const AUTH_HINT: Record<ProviderId, string> = {
  openai: 'Send the Tollgate project API key as "Authorization: Bearer <key>"',
  deepseek: 'Send the Tollgate project API key as "Authorization: Bearer <key>"',
  mistral: 'Send the Tollgate project API key as "Authorization: Bearer <key>"',
  anthropic: 'Send the Tollgate project API key in the "x-api-key" header',
  google: 'Send the Tollgate project API key in the "x-goog-api-key" header or the "key" query parameter',
};

/** The caller's project; a refusal is thrown as a provider-native ProxyError. */
export async function authenticateNative(ctx: ParameterizedContext, keys: KeyLookup, provider: ProviderId): Promise<AuthContext> {
  try {
    await authenticate(keys, { extract: PROXY_KEY_EXTRACTORS[provider] })(ctx, async () => undefined);
  } catch (err) {
    if (err instanceof ApiError) {
      const message = err.code === 'authentication_required' ? `${AUTH_HINT[provider]}` : err.message;
      throw new ProxyError(err.status, err.code, message, { headers: err.status === 401 ? { 'www-authenticate': 'Bearer' } : {} });
    }
    throw err;
  }
  return authOf(ctx);
}
