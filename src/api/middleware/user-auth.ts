/**
 * Authentication of management routes. A bearer that looks like a JWT is a user access token:
 * verified (signature, key id, issuer, audience, expiry), its session checked live, and on
 * `/v1/projects/:project_id/...` routes the user's role in that project looked up in the same
 * round trip; a project the user is no member of answers 404, like an unknown one. Any other
 * bearer is a project API key (the routes that existed before the dashboard keep accepting
 * them): an admin key acts as `admin` of its own project, a client key as `viewer` where a route
 * allows client keys at all.
 */
import type { Middleware, ParameterizedContext } from 'koa';
import type { ApiDeps } from '../deps';
import { ApiError, errors } from '../../errors';
import { authenticate, authOf, bearerKey } from './auth';
import { isSessionLive } from '../../db/repositories/auth-sessions';
import type { Plan } from '../../db/repositories/projects';
import { findSessionRole, type Role } from '../../db/repositories/users';
import { accessTokenKey, InvalidAccessToken, looksLikeJwt, verifyAccessToken } from '../../auth/tokens';

export type Principal =
  | { kind: 'user'; userId: string; sessionId: string; projectId: string | null; role: Role | null; plan: Plan | null }
  | { kind: 'api_key'; keyId: string; projectId: string; role: Role; plan: Plan };

const RANK: Record<Role, number> = { viewer: 1, admin: 2, owner: 3 };

export function hasRole(role: Role | null, required: Role): boolean {
  return role !== null && RANK[role] >= RANK[required];
}

export interface ManagementAuthOptions {
  /** Least role the route needs in the project named by `:project_id` (project routes only). */
  role?: Role;
  /** Which API keys the route accepts besides user tokens: none, admin keys, or any key. */
  apiKeys?: 'none' | 'admin' | 'any';
}

const unauthorized = (code: string, message: string) => new ApiError(401, code, message, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });

/**
 * Verifies a user access token and, when `projectId` is given, the user's membership and role in
 * that project (no membership answers 404, like an unknown project).
 */
export async function authorizeUser(deps: ApiDeps, token: string, projectId: string | undefined, role?: Role): Promise<Principal> {
  const key = await accessTokenKey(deps.db, deps.config);
  let claims;
  try {
    claims = await verifyAccessToken(key, token, deps.clock.now());
  } catch (err) {
    if (err instanceof InvalidAccessToken) throw unauthorized(err.reason === 'expired' ? 'token_expired' : 'invalid_token', err.message);
    throw err;
  }
  const principal: Principal = { kind: 'user', userId: claims.userId, sessionId: claims.sessionId, projectId: null, role: null, plan: null };
  if (projectId === undefined) {
    if (!(await isSessionLive(deps.db, claims))) throw unauthorized('session_revoked', 'The session has ended; sign in again');
    return principal;
  }
  const member = await findSessionRole(deps.db, { sessionId: claims.sessionId, userId: claims.userId, projectId });
  if (!member) {
    if (!(await isSessionLive(deps.db, claims))) throw unauthorized('session_revoked', 'The session has ended; sign in again');
    throw errors.notFound('Project', projectId);
  }
  if (role && !hasRole(member.role, role)) {
    throw errors.forbidden('insufficient_role', `This route requires the ${role} role in the project`, { required_role: role, role: member.role });
  }
  return { ...principal, projectId, role: member.role, plan: member.plan };
}

/** Authenticates and authorizes one management request; sets `ctx.state.principal` (see the module comment). */
export function managementAuthorizer(deps: ApiDeps, opts: ManagementAuthOptions = {}): (ctx: ParameterizedContext) => Promise<void> {
  const apiKeys = opts.apiKeys ?? 'admin';
  const keyAuth = apiKeys === 'none' ? null : authenticate(deps.keys, apiKeys === 'admin' ? { scope: 'admin' } : {});
  return async (ctx) => {
    const bearer = bearerKey(ctx);
    const projectId = (ctx.params as Record<string, string> | undefined)?.project_id;
    if (bearer && looksLikeJwt(bearer)) {
      ctx.state.principal = await authorizeUser(deps, bearer, projectId, opts.role);
      return;
    }
    if (!keyAuth) {
      if (bearer === null) throw new ApiError(401, 'authentication_required', 'Send a user access token as "Authorization: Bearer <token>"', { headers: { 'www-authenticate': 'Bearer' } });
      throw unauthorized('user_token_required', 'This route requires a user access token (POST /v1/auth/exchange)');
    }
    await keyAuth(ctx, async () => undefined);
    const auth = authOf(ctx);
    if (projectId !== undefined && projectId !== auth.projectId) throw errors.notFound('Project', projectId);
    const role: Role = auth.scope === 'admin' ? 'admin' : 'viewer';
    if (opts.role && !hasRole(role, opts.role)) {
      throw errors.forbidden('insufficient_role', `This route requires the ${opts.role} role in the project`, { required_role: opts.role, role });
    }
    if (auth.keyId === null) throw new Error('key authentication set no key id');
    ctx.state.principal = { kind: 'api_key', keyId: auth.keyId, projectId: auth.projectId, role, plan: auth.plan } satisfies Principal;
  };
}

export function managementAuth(deps: ApiDeps, opts: ManagementAuthOptions = {}): Middleware {
  const authorize = managementAuthorizer(deps, opts);
  return async (ctx, next) => {
    await authorize(ctx);
    await next();
  };
}

export function principalOf(ctx: ParameterizedContext): Principal {
  const p = ctx.state.principal as Principal | undefined;
  if (!p) throw new Error('route used principalOf() without managementAuth');
  return p;
}

/** How the caller is named in audit fields (`updated_by`, `created_by`). */
export function actorOf(p: Principal): string {
  return p.kind === 'user' ? `user:${p.userId}` : `api_key:${p.keyId}`;
}

/** The project of a project route (set by managementAuth). */
export function projectOf(ctx: ParameterizedContext): { projectId: string; role: Role; plan: Plan } {
  const p = principalOf(ctx);
  if (!p.projectId || !p.role || !p.plan) throw new Error('projectOf() on a route without :project_id');
  return { projectId: p.projectId, role: p.role, plan: p.plan };
}
