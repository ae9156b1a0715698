/**
 * The guard of routes flagged `members` in the route table: an API key as usual, or a member's user
 * access token with the project named in the Tollgate-Project header. The dashboard reads permits,
 * timelines, events and intents and attests reviews this way without holding a project API key.
 * The token's role decides: a viewer may call `key` routes, an admin or owner `admin` routes too.
 */
import type { Middleware } from 'koa';
import type { AuthContext } from '../../auth-context';
import type { ApiDeps } from '../deps';
import { errors } from '../../errors';
import { looksLikeJwt } from '../../auth/tokens';
import { bearerKey } from './auth';
import { authorizeUser, hasRole } from './user-auth';

export const PROJECT_HEADER = 'tollgate-project';

export function memberOrKey(deps: ApiDeps, auth: 'key' | 'admin', keyGuard: Middleware): Middleware {
  const role = auth === 'admin' ? 'admin' : 'viewer';
  return async (ctx, next) => {
    const bearer = bearerKey(ctx);
    if (!bearer || !looksLikeJwt(bearer)) {
      await keyGuard(ctx, next);
      return;
    }
    const projectId = ctx.get(PROJECT_HEADER);
    if (!projectId) {
      throw errors.validation([{ path: 'headers.tollgate-project', message: 'A user access token needs the project in the Tollgate-Project header', code: 'invalid_type' }]);
    }
    const principal = await authorizeUser(deps, bearer, projectId, role);
    if (principal.kind !== 'user' || !principal.plan || !principal.role) throw new Error('authorizeUser returned no membership');
    ctx.state.principal = principal;
    ctx.state.auth = {
      projectId,
      plan: principal.plan,
      keyId: null,
      scope: hasRole(principal.role, 'admin') ? 'admin' : 'client',
      actor: `user:${principal.userId}`,
    } satisfies AuthContext;
    await next();
  };
}
