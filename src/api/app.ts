import Koa from 'koa';
import Router from '@koa/router';
import { ApiDeps } from './deps';
import { ApiError } from './errors';
import { errorHandler } from './middleware/error-handler';
import { jsonBody } from './middleware/json-body';
import { createHttpMetrics, observe } from './middleware/observe';
import { requestId } from './middleware/request-id';
import { registerStatusRoutes } from './routes/status';
import { registerProjectRoutes } from './routes/projects';
import { registerWorkflowRoutes } from './routes/workflows';
import { registerPolicyRoutes } from './routes/policy';
import { registerExecutionRoutes } from './routes/executions';
import { registerTimelineRoutes } from './routes/timeline';
import { registerPermitRoutes } from './routes/permits';
import { registerProxyRoutes } from './routes/proxy';
import { registerPoliciesRoutes } from './routes/policies';
import { registerJobRoutes } from './routes/jobs';
import { registerWebhookRoutes } from './routes/webhooks';
import { registerGovernanceEventRoutes } from './routes/governance-events';
import { registerIntegrityRoutes } from './routes/integrity';
import { registerComplianceRoutes } from './routes/compliance';
import { registerOpenApiRoutes } from './openapi';

/** Route families, each in src/api/routes/<family>.ts. */
const ROUTE_FAMILIES: Array<(router: Router, deps: ApiDeps) => void> = [registerStatusRoutes, registerProjectRoutes, registerPolicyRoutes, registerWorkflowRoutes, registerExecutionRoutes, registerTimelineRoutes, registerPermitRoutes, registerProxyRoutes, registerPoliciesRoutes, registerJobRoutes, registerWebhookRoutes, registerGovernanceEventRoutes, registerIntegrityRoutes, registerComplianceRoutes];

export function createApp(deps: ApiDeps): Koa {
  const app = new Koa();
  app.proxy = true;
  const router = new Router();
  for (const register of ROUTE_FAMILIES) register(router, deps);
  registerOpenApiRoutes(router); // GET /v1/openapi.json and /docs (src/api/openapi.ts)

  app.use(requestId());
  app.use(observe(deps.logger, createHttpMetrics(deps.metrics)));
  app.use(errorHandler(deps.logger));
  app.use(jsonBody(deps.config.bodyLimitBytes));
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
