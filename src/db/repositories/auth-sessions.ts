/** Login sessions, their refresh tokens and failed logins (tables auth_sessions, refresh_tokens, auth_login_failures). */
import type { Queryable } from '../pool';
import { newId } from '../../ids';

export async function insertSession(db: Queryable, input: { userId: string; expiresAt: Date }): Promise<string> {
  const id = newId('sess');
  await db.query('INSERT INTO auth_sessions (id, user_id, expires_at) VALUES ($1, $2, $3)', [id, input.userId, input.expiresAt]);
  return id;
}

export async function insertRefreshToken(db: Queryable, input: { sessionId: string; tokenHash: Buffer; expiresAt: Date }): Promise<void> {
  await db.query('INSERT INTO refresh_tokens (id, session_id, token_hash, expires_at) VALUES ($1, $2, $3, $4)', [
    newId('rt'),
    input.sessionId,
    input.tokenHash,
    input.expiresAt,
  ]);
}

export interface SpentToken {
  sessionId: string;
  userId: string;
  /** The token was live and is now spent by this call. */
  fresh: boolean;
  expired: boolean;
  sessionRevoked: boolean;
}

/**
 * Spends a refresh token: marks it used in the same statement that reads it, so two concurrent
 * uses of one token cannot both be fresh (the loser sees `used_at` set: reuse).
 */
export async function spendRefreshToken(db: Queryable, tokenHash: Buffer): Promise<SpentToken | null> {
  const { rows } = await db.query<{ session_id: string; user_id: string; fresh: boolean; expired: boolean; revoked: boolean }>(
    `WITH t AS (SELECT id, session_id, used_at, expires_at FROM refresh_tokens WHERE token_hash = $1 FOR UPDATE),
          spent AS (UPDATE refresh_tokens r SET used_at = now() FROM t WHERE r.id = t.id AND t.used_at IS NULL RETURNING r.id)
     SELECT t.session_id, s.user_id, (t.used_at IS NULL) AS fresh,
            (t.expires_at <= now() OR s.expires_at <= now()) AS expired, (s.revoked_at IS NOT NULL) AS revoked
       FROM t JOIN auth_sessions s ON s.id = t.session_id`,
    [tokenHash],
  );
  const r = rows[0];
  return r ? { sessionId: r.session_id, userId: r.user_id, fresh: r.fresh, expired: r.expired, sessionRevoked: r.revoked } : null;
}

export async function revokeSession(db: Queryable, sessionId: string, reason: string): Promise<boolean> {
  const res = await db.query('UPDATE auth_sessions SET revoked_at = now(), revoke_reason = $2 WHERE id = $1 AND revoked_at IS NULL', [sessionId, reason]);
  return (res.rowCount ?? 0) > 0;
}

export async function findSessionOfToken(db: Queryable, tokenHash: Buffer): Promise<{ sessionId: string; userId: string } | null> {
  const { rows } = await db.query<{ session_id: string; user_id: string }>(
    'SELECT t.session_id, s.user_id FROM refresh_tokens t JOIN auth_sessions s ON s.id = t.session_id WHERE t.token_hash = $1',
    [tokenHash],
  );
  return rows[0] ? { sessionId: rows[0].session_id, userId: rows[0].user_id } : null;
}

export async function recordLoginFailure(db: Queryable, input: { email: string; clientIp: string }): Promise<void> {
  await db.query(
    `WITH purge AS (DELETE FROM auth_login_failures WHERE failed_at < now() - interval '1 day')
     INSERT INTO auth_login_failures (email_normalized, client_ip) VALUES ($1, $2)`,
    [input.email, input.clientIp],
  );
}

/** Failures within the window for this e-mail and for this client address, and the oldest of each. */
export async function countLoginFailures(
  db: Queryable,
  input: { email: string; clientIp: string; windowSeconds: number },
): Promise<{ byEmail: number; byIp: number; oldestByEmail: Date | null; oldestByIp: Date | null }> {
  const { rows } = await db.query<{ by_email: number; by_ip: number; oldest_email: Date | null; oldest_ip: Date | null }>(
    `SELECT
       (SELECT count(*)::int FROM auth_login_failures WHERE email_normalized = $1 AND failed_at > now() - make_interval(secs => $3)) AS by_email,
       (SELECT count(*)::int FROM auth_login_failures WHERE client_ip = $2 AND failed_at > now() - make_interval(secs => $3)) AS by_ip,
       (SELECT min(failed_at) FROM auth_login_failures WHERE email_normalized = $1 AND failed_at > now() - make_interval(secs => $3)) AS oldest_email,
       (SELECT min(failed_at) FROM auth_login_failures WHERE client_ip = $2 AND failed_at > now() - make_interval(secs => $3)) AS oldest_ip`,
    [input.email, input.clientIp, input.windowSeconds],
  );
  const r = rows[0];
  return { byEmail: r.by_email, byIp: r.by_ip, oldestByEmail: r.oldest_email, oldestByIp: r.oldest_ip };
}

export async function clearLoginFailures(db: Queryable, email: string): Promise<void> {
  await db.query('DELETE FROM auth_login_failures WHERE email_normalized = $1', [email]);
}

/** The session is neither revoked nor expired and its user not disabled. */
export async function isSessionLive(db: Queryable, input: { sessionId: string; userId: string }): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM auth_sessions s JOIN users u ON u.id = s.user_id AND u.disabled_at IS NULL
      WHERE s.id = $1 AND s.user_id = $2 AND s.revoked_at IS NULL AND s.expires_at > now()`,
    [input.sessionId, input.userId],
  );
  return rows.length > 0;
}
