/**
 * Management sessions: password exchange, refresh-token rotation with reuse detection, logout.
 *
 *   password      → a new session (refresh-token family), an access JWT and its first refresh token
 *   refresh_token → the presented token is spent and replaced; a spent token presented again means
 *                   it leaked: the whole session is revoked (every token of the family, and every
 *                   access token naming it, which the middleware checks against the session)
 *   logout        → the session is revoked
 *
 * Login failures are counted per e-mail and per client address in PostgreSQL (every API process
 * agrees); past the limit the exchange answers 429 with Retry-After, before any password check.
 */
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Db } from '../db/pool';
import { ApiError } from '../errors';
import {
  clearLoginFailures,
  countLoginFailures,
  findSessionOfToken,
  insertRefreshToken,
  insertSession,
  recordLoginFailure,
  revokeSession,
  spendRefreshToken,
} from '../db/repositories/auth-sessions';
import { findUser, findUserForLogin, normalizeEmail, type User } from '../db/repositories/users';
import type { Logger } from '../logger';
import { decoyHash, verifyPassword } from './passwords';
import { accessTokenKey, hashRefreshToken, newRefreshToken, signAccessToken } from './tokens';

export interface AuthDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'env' | 'masterKey' | 'databaseUrl' | 'auth'>;
}

export interface SessionGrant {
  object: 'session';
  token_type: 'Bearer';
  access_token: string;
  expires_in: number;
  expires_at: string;
  refresh_token: string;
  refresh_token_expires_in: number;
  session_id: string;
  user: { id: string; email: string };
}

const invalidGrant = (message: string) => new ApiError(401, 'invalid_grant', message, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });

async function grant(deps: AuthDeps, user: User, sessionId: string): Promise<SessionGrant> {
  const now = deps.clock.now();
  const { accessTokenTtlSeconds: accessTtl, refreshTokenTtlSeconds: refreshTtl } = deps.config.auth;
  const refresh = newRefreshToken();
  await insertRefreshToken(deps.db, { sessionId, tokenHash: hashRefreshToken(refresh), expiresAt: new Date(now.getTime() + refreshTtl * 1000) });
  const key = await accessTokenKey(deps.db, deps.config);
  const access = await signAccessToken(key, { userId: user.id, sessionId, now, ttlSeconds: accessTtl });
  return {
    object: 'session',
    token_type: 'Bearer',
    access_token: access,
    expires_in: accessTtl,
    expires_at: new Date(Math.floor(now.getTime() / 1000) * 1000 + accessTtl * 1000).toISOString(),
    refresh_token: refresh,
    refresh_token_expires_in: refreshTtl,
    session_id: sessionId,
    user: { id: user.id, email: user.email },
  };
}

export async function exchangePassword(deps: AuthDeps, input: { email: string; password: string; clientIp: string }): Promise<SessionGrant> {
  const email = normalizeEmail(input.email);
  const { loginMaxFailures, loginMaxFailuresPerIp, loginWindowSeconds } = deps.config.auth;
  const failures = await countLoginFailures(deps.db, { email, clientIp: input.clientIp, windowSeconds: loginWindowSeconds });
  const limited = failures.byEmail >= loginMaxFailures ? failures.oldestByEmail : failures.byIp >= loginMaxFailuresPerIp ? failures.oldestByIp : null;
  if (limited) {
    const retryAfter = Math.max(1, Math.ceil((limited.getTime() + loginWindowSeconds * 1000 - Date.now()) / 1000));
    throw new ApiError(429, 'login_rate_limited', 'Too many failed logins; retry later', { details: { retry_after_seconds: retryAfter }, headers: { 'retry-after': String(retryAfter) } });
  }
  const user = await findUserForLogin(deps.db, email);
  // Unknown e-mail: verify against a decoy so the answer takes as long and says the same.
  const ok = user ? await verifyPassword(user.password_hash, input.password) : (await verifyPassword(await decoyHash(), input.password), false);
  if (!user || !ok || user.disabled_at) {
    await recordLoginFailure(deps.db, { email, clientIp: input.clientIp });
    deps.logger.info({ event: 'auth.login_failed', user_id: user?.id ?? null }, 'login failed');
    throw invalidGrant('The e-mail or password is not correct');
  }
  await clearLoginFailures(deps.db, email);
  const sessionId = await insertSession(deps.db, {
    userId: user.id,
    expiresAt: new Date(deps.clock.now().getTime() + deps.config.auth.refreshTokenTtlSeconds * 1000),
  });
  return grant(deps, user, sessionId);
}

export async function exchangeRefreshToken(deps: AuthDeps, refreshToken: string): Promise<SessionGrant> {
  const spent = await spendRefreshToken(deps.db, hashRefreshToken(refreshToken));
  if (!spent) throw invalidGrant('The refresh token is not valid');
  if (!spent.fresh) {
    // A spent token came back: whoever holds the family may be an attacker. End the session.
    if (await revokeSession(deps.db, spent.sessionId, 'refresh_token_reuse')) {
      deps.logger.warn({ event: 'auth.refresh_token_reuse', session_id: spent.sessionId, user_id: spent.userId }, 'refresh token reused; session revoked');
    }
    throw invalidGrant('The refresh token was already used; the session has been revoked');
  }
  if (spent.sessionRevoked) throw invalidGrant('The session has been revoked');
  if (spent.expired) throw invalidGrant('The refresh token has expired');
  const user = await findUser(deps.db, spent.userId);
  if (!user || user.disabled_at) throw invalidGrant('The user is disabled');
  return grant(deps, user, spent.sessionId);
}

/** Revokes the session of a refresh token or of the calling access token; true when one was live. */
export async function logout(deps: AuthDeps, input: { refreshToken?: string; sessionId?: string }): Promise<boolean> {
  let sessionId = input.sessionId;
  if (input.refreshToken) {
    const found = await findSessionOfToken(deps.db, hashRefreshToken(input.refreshToken));
    if (!found) throw invalidGrant('The refresh token is not valid');
    sessionId = found.sessionId;
  }
  if (!sessionId) return false;
  return revokeSession(deps.db, sessionId, 'logout');
}
