import { timingSafeEqual } from 'node:crypto';
import type { RouteIndex } from '../route-index';
import { ApiDeps } from '../deps';
import { routeFamily } from '../route-table';
import { statusSummarySchema } from '../schemas/status';
import { databaseAnswers } from '../../db/pool';
import { ApiError } from '../errors';
import { temporalReady } from '../../temporal/connection';
import { PROVIDER_IDS, DEFAULT_PROVIDER_BASE_URLS } from '../../config';

const databaseReady = (deps: ApiDeps) => databaseAnswers(deps.db);

/**
 * Public readiness: no authentication, no tenant data. 200 when PostgreSQL and Temporal answer,
 * 503 otherwise (so it doubles as a load-balancer readiness probe).
 */
export const statusRoutes = routeFamily('Status', () => ({}), [
  {
    method: 'get',
    path: '/v1/public/status/summary',
    stability: 'GA',
    since: 'v1.0',
    auth: 'public',
    summary: 'Readiness of the database, Temporal and providers (503 with the same body when not ready)',
    response: statusSummarySchema,
    alsoStatus: [503],
    handler: async (ctx, { deps }) => {
      const [db, temporal] = await Promise.all([databaseReady(deps), temporalReady(deps.temporal.connection)]);
      const ready = db && temporal;
      ctx.status = ready ? 200 : 503;
      ctx.set('cache-control', 'no-store');
      ctx.body = {
        status: ready ? 'ready' : 'degraded',
        checked_at: deps.clock.now().toISOString(),
        components: {
          database: { status: db ? 'ready' : 'unavailable' },
          temporal: { status: temporal ? 'ready' : 'unavailable' },
        },
        providers: PROVIDER_IDS.map((provider) => {
          const endpoint = deps.config.providers[provider];
          const upstream = endpoint.baseUrl === DEFAULT_PROVIDER_BASE_URLS[provider] ? 'provider' : 'custom_endpoint';
          return { provider, status: endpoint.apiKey || upstream === 'custom_endpoint' ? 'configured' : 'not_configured', upstream };
        }),
      };
    },
  },
]);

/** GET /metrics: Prometheus text outside /v1, not an API route (not in the document). */
export function registerMetricsRoute(router: RouteIndex, deps: ApiDeps): void {
  // Metrics describe traffic per route and status: behind a bearer token (METRICS_TOKEN) wherever
  // one is configured, and never open in production (docs/decisions/hostile-inputs.md).
  router.get('/metrics', async (ctx) => {
    const token = deps.config.metricsToken;
    if (token) {
      const presented = Buffer.from(/^Bearer\s+(\S+)$/i.exec(ctx.get('authorization'))?.[1] ?? '');
      const expected = Buffer.from(token);
      if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
        throw new ApiError(401, 'authentication_required', 'GET /metrics needs "Authorization: Bearer <METRICS_TOKEN>"', { headers: { 'www-authenticate': 'Bearer' } });
      }
    } else if (deps.config.env === 'production') {
      throw new ApiError(403, 'metrics_token_required', 'Set METRICS_TOKEN to expose GET /metrics in production');
    }
    ctx.set('content-type', deps.metrics.contentType);
    ctx.body = await deps.metrics.metrics();
  });
}
