import Koa from 'koa';
import { ApiDeps } from './deps';
import { ApiError } from './errors';
import { errorHandler } from './middleware/error-handler';
import { jsonBody } from './middleware/json-body';
import { createAuthFailureLimiter, limitFailedAuthentication } from './middleware/auth-failures';
import { httpLimitsFromEnv } from './middleware/http-limits';
import { createHttpMetrics, observe } from './middleware/observe';
import { requestId } from './middleware/request-id';
import { traceRequests } from './middleware/trace';
import { RouteIndex } from './route-index';
import { registerMetricsRoute } from './routes/status';
import { ROUTE_TABLE } from './routes';
import type { RouteFamily } from './route-table';
import { openApiRoutes } from './openapi';
import { registerDocsPage } from './docs-page';
import { registerDashboard } from './dashboard';

export function createApp(deps: ApiDeps): Koa {
  const app = new Koa();
  app.proxy = true;
  const router = new RouteIndex();
  const table: RouteFamily[] = [...ROUTE_TABLE, openApiRoutes];
  for (const family of table) family.mount(router, deps);
  registerMetricsRoute(router, deps); // GET /metrics (Prometheus text, outside /v1)
  registerDocsPage(router); // GET /docs, the reference page (src/api/docs-page.ts)
  registerDashboard(router); // GET /dashboard, the operator dashboard (dashboard/, src/api/dashboard.ts)

  const limits = httpLimitsFromEnv();
  app.use(requestId());
  app.use(observe(deps.logger, createHttpMetrics(deps.metrics)));
  app.use(traceRequests());
  app.use(limitFailedAuthentication(createAuthFailureLimiter(limits.authFailures)));
  app.use(errorHandler(deps.logger));
  app.use(jsonBody(deps.config.bodyLimitBytes, limits.controlBodyLimitBytes));
  app.use(router.routes());
  app.use(
    router.allowedMethods({
      throw: true,
      methodNotAllowed: () => new ApiError(405, 'method_not_allowed', 'This route does not support the request method'),
      notImplemented: () => new ApiError(501, 'not_implemented', 'This HTTP method is not implemented'),
    }),
  );
  // Errors are rendered by errorHandler; keep Koa from printing them a second time.
  app.silent = true;
  return app;
}
