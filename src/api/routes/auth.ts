import { z } from 'zod';
import { logoutSchema as logoutResultSchema, sessionGrantSchema } from '../schemas/management';
import { routeFamily } from '../route-table';
import { ApiError, parseOrThrow } from '../errors';
import { bearerKey } from '../middleware/auth';
import { exchangePassword, exchangeRefreshToken, logout } from '../../auth/service';
import { accessTokenKey, InvalidAccessToken, looksLikeJwt, verifyAccessToken } from '../../auth/tokens';

export const exchangeSchema = z.discriminatedUnion('grant_type', [
  z.object({ grant_type: z.literal('password'), email: z.string().min(3).max(320), password: z.string().min(1).max(1024) }).strict(),
  z.object({ grant_type: z.literal('refresh_token'), refresh_token: z.string().min(1).max(200) }).strict(),
]);

export const logoutSchema = z.object({ refresh_token: z.string().min(1).max(200).optional() }).strict();

/**
 * User sessions of the management API (docs/decisions/management-api.md): POST
 * /v1/auth/exchange trades credentials or a refresh token for an access JWT and a new refresh
 * token; POST /v1/auth/logout ends the session of a refresh token or of the calling access token.
 */
export const authRoutes = routeFamily(
  'Auth',
  (deps) => ({ authDeps: { db: deps.db, clock: deps.clock, logger: deps.logger, config: deps.config } }),
  [
    {
      method: 'post',
      path: '/v1/auth/exchange',
      stability: 'Management',
      auth: 'public',
      summary: 'Exchange a password or a refresh token for an access JWT and a new refresh token',
      response: sessionGrantSchema,
      body: exchangeSchema,
      handler: async (ctx, { authDeps }) => {
        const body = parseOrThrow(exchangeSchema, ctx.request.body ?? {});
        ctx.set('Cache-Control', 'no-store');
        ctx.body =
          body.grant_type === 'password'
            ? await exchangePassword(authDeps, { email: body.email, password: body.password, clientIp: ctx.ip || 'unknown' })
            : await exchangeRefreshToken(authDeps, body.refresh_token);
      },
    },
    {
      method: 'post',
      path: '/v1/auth/logout',
      stability: 'Management',
      auth: 'public',
      summary: 'End the session of a refresh token (body) or of the calling access token',
      response: logoutResultSchema,
      body: logoutSchema,
      handler: async (ctx, { deps, authDeps }) => {
        const body = parseOrThrow(logoutSchema, ctx.request.body ?? {});
        let sessionId: string | undefined;
        const bearer = bearerKey(ctx);
        if (!body.refresh_token) {
          if (!bearer || !looksLikeJwt(bearer)) {
            throw new ApiError(401, 'authentication_required', 'Send the refresh token in the body or the access token as "Authorization: Bearer <token>"', { headers: { 'www-authenticate': 'Bearer' } });
          }
          try {
            sessionId = (await verifyAccessToken(await accessTokenKey(deps.db, deps.config), bearer, deps.clock.now())).sessionId;
          } catch (err) {
            if (err instanceof InvalidAccessToken) throw new ApiError(401, err.reason === 'expired' ? 'token_expired' : 'invalid_token', err.message, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });
            throw err;
          }
        }
        const revoked = await logout(authDeps, { refreshToken: body.refresh_token, sessionId });
        ctx.body = { object: 'logout', revoked };
      },
    },
  ],
);
