import { Middleware, ParameterizedContext } from 'koa';
import { ApiError } from '../errors';
import type { KeyScope } from '../../db/repositories/api-keys';
import type { KeyLookup } from '../key-cache';

import type { AuthContext, KeyAuthContext } from '../../auth-context';
export type { AuthContext, KeyAuthContext };

export type KeyExtractor = (ctx: ParameterizedContext) => string | null;

/** `Authorization: Bearer <key>`, the runtime routes' scheme. */
export const bearerKey: KeyExtractor = (ctx) => {
  const header = ctx.get('authorization');
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : '';
};

/**
 * Authenticates the project API key. `admin` keys may call every route; `client` keys may not call
 * admin-scoped routes. The project always comes from the key.
 */
export function authenticate(keys: KeyLookup, opts: { scope?: KeyScope; extract?: KeyExtractor } = {}): Middleware {
  const extract = opts.extract ?? bearerKey;
  return async (ctx, next) => {
    const presented = extract(ctx);
    if (presented === null) {
      throw new ApiError(401, 'authentication_required', 'Send a project API key as "Authorization: Bearer <key>"', { headers: { 'www-authenticate': 'Bearer' } });
    }
    if (presented === '') {
      throw new ApiError(401, 'malformed_authorization', 'The Authorization header must be "Bearer <key>"', { headers: { 'www-authenticate': 'Bearer' } });
    }
    const record = await keys.find(presented);
    if (!record) {
      throw new ApiError(401, 'invalid_api_key', 'The API key is not valid', { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });
    }
    if (record.revoked_at) {
      throw new ApiError(401, 'api_key_revoked', 'The API key has been revoked', { details: { key_id: record.id }, headers: {
        'www-authenticate': 'Bearer error="invalid_token"',
      } });
    }
    if (record.expires_at && new Date(record.expires_at).getTime() <= Date.now()) {
      throw new ApiError(401, 'api_key_expired', 'The API key has expired', { details: { key_id: record.id }, headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });
    }
    if (opts.scope === 'admin' && record.scope !== 'admin') {
      throw new ApiError(403, 'insufficient_scope', 'This route requires an admin-scoped API key', { details: { required_scope: 'admin', key_scope: record.scope } });
    }
    const auth: AuthContext = { projectId: record.project_id, plan: record.plan, keyId: record.id, scope: record.scope, actor: `api_key:${record.id}` };
    ctx.state.auth = auth;
    await next();
  };
}

export function authOf(ctx: ParameterizedContext): AuthContext {
  const auth = ctx.state.auth as AuthContext | undefined;
  if (!auth) throw new Error('route used authOf() without the authenticate middleware');
  return auth;
}

/** The caller of a route that accepts only API keys (no `members` flag in its route entry). */
export function keyAuthOf(ctx: ParameterizedContext): KeyAuthContext {
  const auth = authOf(ctx);
  if (auth.keyId === null) throw new Error('an API-key-only route was reached with a user token');
  return auth as KeyAuthContext;
}
