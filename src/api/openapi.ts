/**
 * The OpenAPI 3.1 document (GET /v1/openapi.json), generated from the route table
 * (src/api/routes/index.ts: method, path, tier, auth, request and response schemas, the same zod
 * objects the routes parse with); every family is in the table. test/unit/api/openapi.test.ts walks
 * the Koa router and fails when a /v1
 * route is neither documented nor in OPENAPI_EXCLUDED, so the document cannot drift silently.
 * Tiers: docs/decisions/route-tiers.md. The reference page (/docs): src/api/docs-page.ts.
 */
import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import type { DeprecationNotice } from './deprecation';
import { routeFamily, type RouteDoc } from './route-table';
import { ROUTE_TABLE } from './routes';
import { errorSchema } from './schemas/error';

export type { Method, RouteDoc, Stability } from './route-table';

/** GET /v1/openapi.json: public, built once per process (deprecations from configuration included). */
export const openApiRoutes = routeFamily('Status', () => ({}), [
  {
    method: 'get',
    path: '/v1/openapi.json',
    stability: 'Beta',
    auth: 'public',
    summary: 'This document',
    response: z.looseObject({ openapi: z.literal('3.1.0') }).describe('An OpenAPI 3.1 document'),
    handler: (ctx, { deps }) => {
      ctx.set('Cache-Control', 'public, max-age=300');
      ctx.body = buildOpenApiDocument(Array.isArray(deps.config.deprecatedRoutes) ? deps.config.deprecatedRoutes : []);
    },
  },
]);

/**
 * Registered routes deliberately left out of the document: `METHOD path` as Koa registers it.
 * Nothing under /v1 today; /metrics (Prometheus text, outside /v1) and /docs are not API routes.
 */
export const OPENAPI_EXCLUDED: string[] = [];

export { errorSchema };

const ERROR_STATUSES: Record<number, string> = {
  400: 'Invalid body, headers or field combination',
  401: 'Missing or invalid credentials',
  403: 'Hard deny, scope or configuration',
  404: 'Resource absent for this project',
  409: 'Conflict with an existing resource or replay contract',
  429: 'Throttled; Retry-After in seconds',
  500: 'Internal failure',
  503: 'The database is unavailable (restart, failover); Retry-After in seconds',
};

export function openApiPath(koaPath: string): string {
  return koaPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function pathParams(koaPath: string): z.ZodObject | undefined {
  const names = [...koaPath.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);
  if (!names.length) return undefined;
  return z.object(
    Object.fromEntries(
      names.map((n) => [n, n === 'native_path' ? z.string().describe("The provider's native path, for example chat/completions (may contain /)") : z.string()]),
    ),
  );
}

/**
 * Every documented route: the route table, this module's own route and the hand-listed ones.
 * Each entry has method, Koa path, tier, auth, and the zod body/query schemas the route parses with.
 */
export function documentedRoutes(): RouteDoc[] {
  return [...ROUTE_TABLE.flatMap((f) => f.docs), ...openApiRoutes.docs];
}

const cached = new Map<string, Record<string, unknown>>();

type ResponseObject = ResponseConfig;

const DEPRECATION_HEADERS: NonNullable<ResponseConfig['headers']> = {
  Deprecation: { description: 'RFC 9745: when the route was deprecated (`@<epoch seconds>`)', schema: { type: 'string' } },
  Sunset: { description: 'RFC 8594: when the route stops answering (HTTP-date)', schema: { type: 'string' } },
  Link: { description: 'The deprecation notice (rel="deprecation") and the replacement (rel="successor-version")', schema: { type: 'string' } },
};

function successResponses(route: RouteDoc, deprecated: boolean): Record<string, ResponseObject> {
  const out: Record<string, ResponseObject> = {};
  for (const status of [route.status ?? 200, ...(route.alsoStatus ?? [])]) {
    const res: ResponseObject =
      status === 204
        ? { description: 'No content' }
        : {
            description: status === (route.status ?? 200) ? 'Success' : `Also answered with ${status}, same body`,
            content: { [route.contentType ?? 'application/json']: { schema: route.response ?? z.unknown() } },
          };
    if (deprecated) res.headers = DEPRECATION_HEADERS;
    out[String(status)] = res;
  }
  return out;
}

export function buildOpenApiDocument(deprecations: DeprecationNotice[] = [], version = process.env.npm_package_version ?? '0.1.0'): Record<string, unknown> {
  const key = JSON.stringify([deprecations, version]);
  const hit = cached.get(key);
  if (hit) return hit;
  const notices = new Map(deprecations.map((n) => [n.route, n]));
  const registry = new OpenAPIRegistry();
  const bearer = registry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description:
      'A project API key (tg_client_… or tg_admin_…); admin-scope routes need an admin key. Management routes take a user access token (POST /v1/auth/exchange); routes marked `x-member-tokens` take one too, with the project in the Tollgate-Project header',
  });
  for (const route of documentedRoutes()) {
    const error = route.errorBody ?? errorSchema; // errorSchema is a component through its .meta({ id })
    const notice = notices.get(`${route.method.toUpperCase()} ${route.path}`) ?? route.deprecated;
    const responses = successResponses(route, notice !== undefined);
    for (const [code, description] of Object.entries(ERROR_STATUSES)) {
      if (route.auth === 'public' && (code === '401' || code === '403')) continue;
      if (responses[code]) continue;
      responses[code] = route.nativeErrors ? { description: `${description} (provider-native error body)` } : { description, content: { 'application/json': { schema: error } } };
    }
    if (!route.nativeErrors) responses.default = { description: 'Any other failure, in the error shape', content: { 'application/json': { schema: error } } };
    const params = pathParams(route.path);
    registry.registerPath({
      method: route.method,
      path: openApiPath(route.path),
      summary: route.summary,
      tags: [route.tag],
      security: route.auth === 'public' ? [] : [{ [bearer.name]: [] }],
      request: {
        ...(params ? { params } : {}),
        ...(route.query ? { query: route.query as z.ZodObject } : {}),
        ...(route.body ? { body: { required: true, content: { 'application/json': { schema: route.body } } } } : {}),
      },
      responses,
      ...(notice ? { deprecated: true, 'x-sunset': new Date(notice.sunset).toISOString(), ...(notice.successor ? { 'x-successor': notice.successor } : {}) } : {}),
      'x-stability': notice && route.stability !== 'Management' ? 'Deprecated' : route.stability,
      ...(route.since ? { 'x-since': route.since } : {}),
      ...(route.auth === 'admin' ? { 'x-scope': 'admin' } : {}),
      ...(route.members ? { 'x-member-tokens': true } : {}),
    });
  }
  const doc = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Tollgate API',
      version,
      description:
        'Governed execution for LLM providers. `x-stability` is the route tier (GA, Beta, Deprecated; Management routes are excluded from tiers), `x-since` the release label from the spec where it assigns one. A deprecated route keeps answering, with `Deprecation`, `Sunset` and `Link` headers.',
    },
    servers: [{ url: '/' }],
  }) as unknown as Record<string, unknown>;
  cached.set(key, doc);
  return doc;
}
