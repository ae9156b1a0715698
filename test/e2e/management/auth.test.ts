import { fixedClock } from '../../../src/clock';
import { decodeProtectedHeader, decodeJwt } from 'jose';
import { createTestProject, http, startTestTollgate } from '../../support/tollgate';
import { PASSWORD, signIn, userWithRoles } from './support';

/** Management sessions: exchange, refresh rotation, reuse detection, logout, expiry, login rate limit. */
describe('POST /v1/auth/exchange and /v1/auth/logout', () => {
  const clock = fixedClock(new Date());
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof http>;
  beforeAll(async () => {
    tg = await startTestTollgate({ clock, role: 'api', env: { AUTH_LOGIN_MAX_FAILURES: '3' } });
    call = http(tg.url!);
  });
  afterAll(async () => tg.close());

  it('exchanges a password for a short-lived access JWT with a key id and an opaque refresh token', async () => {
    const { project } = await createTestProject(tg.db);
    const user = await userWithRoles(tg.db, [{ projectId: project.id, role: 'viewer' }]);
    const res = await call('POST', '/v1/auth/exchange', { body: { grant_type: 'password', email: user.email.toUpperCase(), password: PASSWORD } });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.json).toMatchObject({ object: 'session', token_type: 'Bearer', expires_in: 900, user: { id: user.id, email: user.email } });
    expect(res.json.refresh_token).toMatch(/^tgr_[0-9A-Za-z]{43}$/);
    const header = decodeProtectedHeader(res.json.access_token);
    expect(header).toMatchObject({ alg: 'HS256', typ: 'JWT' });
    expect(header.kid).toMatch(/^hs256-/);
    const claims = decodeJwt(res.json.access_token);
    expect(claims.sub).toBe(user.id);
    expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(15 * 60);
    // The refresh token is stored hashed only.
    const stored = await tg.db.query("SELECT encode(token_hash, 'hex') AS h FROM refresh_tokens t JOIN auth_sessions s ON s.id = t.session_id WHERE s.user_id = $1", [user.id]);
    expect(stored.rows).toHaveLength(1);
    expect(JSON.stringify(stored.rows)).not.toContain(res.json.refresh_token);

    const read = await call('GET', `/v1/projects/${project.id}`, { key: res.json.access_token });
    expect(read.status).toBe(200);
    expect(read.json).toMatchObject({ id: project.id, role: 'viewer' });
  });

  it('refuses a wrong password and an unknown e-mail alike, and rate-limits repeated failures with Retry-After', async () => {
    const user = await userWithRoles(tg.db, []);
    const wrong = await call('POST', '/v1/auth/exchange', { body: { grant_type: 'password', email: user.email, password: 'not the password' } });
    const unknown = await call('POST', '/v1/auth/exchange', { body: { grant_type: 'password', email: `nobody-${user.id}@example.test`, password: 'whatever' } });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.json.error).toEqual(unknown.json.error);
    expect(wrong.json.error.code).toBe('invalid_grant');
    for (let i = 0; i < 2; i++) await call('POST', '/v1/auth/exchange', { body: { grant_type: 'password', email: user.email, password: `wrong-${i}` } });
    // Three failures: even the right password is now refused until the window passes.
    const limited = await call('POST', '/v1/auth/exchange', { body: { grant_type: 'password', email: user.email, password: PASSWORD } });
    expect(limited.status).toBe(429);
    expect(limited.json.error.code).toBe('login_rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    const bad = await call('POST', '/v1/auth/exchange', { body: { grant_type: 'magic' } });
    expect(bad.status).toBe(400);
  });

  it('rotates the refresh token on every use; reusing a spent one revokes the whole session', async () => {
    const { project } = await createTestProject(tg.db);
    const user = await userWithRoles(tg.db, [{ projectId: project.id, role: 'admin' }]);
    const first = await signIn(call, user.email);
    const second = await call('POST', '/v1/auth/exchange', { body: { grant_type: 'refresh_token', refresh_token: first.refresh_token } });
    expect(second.status).toBe(200);
    expect(second.json.refresh_token).not.toBe(first.refresh_token);
    expect(second.json.session_id).toBe(first.session_id);
    const third = await call('POST', '/v1/auth/exchange', { body: { grant_type: 'refresh_token', refresh_token: second.json.refresh_token } });
    expect(third.status).toBe(200);
    expect((await call('GET', `/v1/projects/${project.id}`, { key: third.json.access_token })).status).toBe(200);

    // The first token again: reuse. The session ends: the newest refresh token and access token die with it.
    const reuse = await call('POST', '/v1/auth/exchange', { body: { grant_type: 'refresh_token', refresh_token: first.refresh_token } });
    expect(reuse.status).toBe(401);
    expect(reuse.json.error.code).toBe('invalid_grant');
    const latest = await call('POST', '/v1/auth/exchange', { body: { grant_type: 'refresh_token', refresh_token: third.json.refresh_token } });
    expect(latest.status).toBe(401);
    const access = await call('GET', `/v1/projects/${project.id}`, { key: third.json.access_token });
    expect(access.status).toBe(401);
    expect(access.json.error.code).toBe('session_revoked');
    const row = await tg.db.query('SELECT revoke_reason FROM auth_sessions WHERE id = $1', [first.session_id]);
    expect(row.rows[0].revoke_reason).toBe('refresh_token_reuse');
  });

  it('logout ends the session by refresh token or by access token', async () => {
    const { project } = await createTestProject(tg.db);
    const user = await userWithRoles(tg.db, [{ projectId: project.id, role: 'owner' }]);
    const a = await signIn(call, user.email);
    const out = await call('POST', '/v1/auth/logout', { body: { refresh_token: a.refresh_token } });
    expect(out.status).toBe(200);
    expect(out.json).toEqual({ object: 'logout', revoked: true });
    expect((await call('GET', `/v1/projects/${project.id}`, { key: a.access_token })).status).toBe(401);
    expect((await call('POST', '/v1/auth/exchange', { body: { grant_type: 'refresh_token', refresh_token: a.refresh_token } })).status).toBe(401);

    const b = await signIn(call, user.email);
    const out2 = await call('POST', '/v1/auth/logout', { key: b.access_token, body: {} });
    expect(out2.json.revoked).toBe(true);
    expect((await call('GET', `/v1/projects/${project.id}`, { key: b.access_token })).status).toBe(401);
    expect((await call('POST', '/v1/auth/logout', { body: {} })).status).toBe(401);
  });

  it('an access token expires after 15 minutes; a refresh token after its lifetime', async () => {
    const { project } = await createTestProject(tg.db);
    const user = await userWithRoles(tg.db, [{ projectId: project.id, role: 'viewer' }]);
    const s = await signIn(call, user.email);
    clock.advance(15 * 60 * 1000 + 1000);
    const expired = await call('GET', `/v1/projects/${project.id}`, { key: s.access_token });
    expect(expired.status).toBe(401);
    expect(expired.json.error.code).toBe('token_expired');
    const tampered = s.access_token.slice(0, -2) + (s.access_token.endsWith('AA') ? 'BB' : 'AA');
    expect((await call('GET', `/v1/projects/${project.id}`, { key: tampered })).json.error.code).toMatch(/invalid_token|token_expired/);
    // Refresh still works inside its lifetime (the database clock decides it): a new access token.
    const renewed = await call('POST', '/v1/auth/exchange', { body: { grant_type: 'refresh_token', refresh_token: s.refresh_token } });
    expect(renewed.status).toBe(200);
    expect((await call('GET', `/v1/projects/${project.id}`, { key: renewed.json.access_token })).status).toBe(200);
    // A refresh token past its expiry is refused.
    await tg.db.query("UPDATE refresh_tokens SET expires_at = now() - interval '1 second' WHERE session_id = $1 AND used_at IS NULL", [s.session_id]);
    const late = await call('POST', '/v1/auth/exchange', { body: { grant_type: 'refresh_token', refresh_token: renewed.json.refresh_token } });
    expect(late.status).toBe(401);
    expect(late.json.error.message).toMatch(/expired/);
  });
});
