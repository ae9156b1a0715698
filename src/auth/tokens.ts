/**
 * Access tokens: JWTs (HS256 through `jose`) of at most 15 minutes naming the user (`sub`) and the
 * session (`sid`), with a key id in the header. The key is derived from TOLLGATE_MASTER_KEY (HKDF,
 * info "auth-jwt/v1"); without one, development and test processes share a generated key kept in
 * local_secret_keys; production refuses to start a session. Refresh tokens are opaque random
 * strings stored as SHA-256 (src/db/repositories/auth-sessions.ts).
 */
import { createHash, hkdfSync, randomBytes } from 'node:crypto';
import { jwtVerify, SignJWT, errors as joseErrors } from 'jose';
import type { Queryable } from '../db/pool';
import { loadOrCreateLocalKey } from '../db/repositories/local-secret-keys';
import { randomBase62 } from '../ids';

export const ISSUER = 'tollgate';
export const AUDIENCE = 'tollgate-management';
export const MAX_ACCESS_TTL_SECONDS = 15 * 60;

export interface SigningKey {
  kid: string;
  secret: Uint8Array;
}

export interface AccessClaims {
  userId: string;
  sessionId: string;
  expiresAt: Date;
}

export class InvalidAccessToken extends Error {
  constructor(readonly reason: 'expired' | 'invalid') {
    super(reason === 'expired' ? 'The access token has expired' : 'The access token is not valid');
  }
}

export function signingKeyFrom(secret: Buffer): SigningKey {
  return { kid: 'hs256-' + createHash('sha256').update(secret).digest('hex').slice(0, 16), secret: new Uint8Array(secret) };
}

const cache = new Map<string, Promise<SigningKey>>();

export function accessTokenKey(db: Queryable, config: { env: string; masterKey?: string; databaseUrl: string }): Promise<SigningKey> {
  const id = config.masterKey ? `mk:${config.masterKey}` : `db:${config.databaseUrl}`;
  let p = cache.get(id);
  if (!p) {
    if (config.masterKey) {
      p = Promise.resolve(signingKeyFrom(Buffer.from(hkdfSync('sha256', Buffer.from(config.masterKey, 'base64'), 'tollgate', 'auth-jwt/v1', 32))));
    } else if (config.env === 'production') {
      return Promise.reject(new Error('TOLLGATE_MASTER_KEY is not set: user sessions cannot be signed in production'));
    } else {
      p = loadOrCreateLocalKey(db, 'auth_jwt', () => randomBytes(32)).then(signingKeyFrom);
      p.catch(() => cache.delete(id));
    }
    cache.set(id, p);
  }
  return p;
}

export async function signAccessToken(key: SigningKey, input: { userId: string; sessionId: string; now: Date; ttlSeconds: number }): Promise<string> {
  const iat = Math.floor(input.now.getTime() / 1000);
  return new SignJWT({ sid: input.sessionId })
    .setProtectedHeader({ alg: 'HS256', kid: key.kid, typ: 'JWT' })
    .setSubject(input.userId)
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt(iat)
    .setExpirationTime(iat + Math.min(input.ttlSeconds, MAX_ACCESS_TTL_SECONDS))
    .setJti(randomBase62(16))
    .sign(key.secret);
}

export async function verifyAccessToken(key: SigningKey, token: string, now: Date): Promise<AccessClaims> {
  try {
    const { payload, protectedHeader } = await jwtVerify(token, key.secret, {
      algorithms: ['HS256'],
      issuer: ISSUER,
      audience: AUDIENCE,
      currentDate: now,
      requiredClaims: ['sub', 'exp', 'iat'],
    });
    if (protectedHeader.kid !== key.kid || typeof payload.sid !== 'string' || typeof payload.sub !== 'string') throw new InvalidAccessToken('invalid');
    return { userId: payload.sub, sessionId: payload.sid, expiresAt: new Date(payload.exp! * 1000) };
  } catch (err) {
    if (err instanceof InvalidAccessToken) throw err;
    if (err instanceof joseErrors.JWTExpired) throw new InvalidAccessToken('expired');
    throw new InvalidAccessToken('invalid');
  }
}

/** `tgr_<43 base62>` (≈256 bits). */
export function newRefreshToken(): string {
  return `tgr_${randomBase62(43)}`;
}

export function hashRefreshToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** A bearer credential shaped like a JWT (three base64url parts) rather than an API key. */
export function looksLikeJwt(bearer: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(bearer);
}
