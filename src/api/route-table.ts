/**
 * Routes as data. Each src/api/routes/<family>.ts exports a `routeFamily(...)`: its routes with
 * method, path, tier, since, auth, request and response schemas and handler. `mount` puts them on
 * the API's routers (src/api/route-index.ts; auth and deprecation headers from the entry) and
 * `routeDocs` hands the same entries to the OpenAPI document (src/api/openapi.ts): there is no
 * second list.
 */
import type { Middleware, ParameterizedContext } from 'koa';
import type { z } from 'zod';
import type { ApiDeps } from './deps';
import { deprecationHeaders, type DeprecationNotice } from './deprecation';
import { parseOrThrow } from './errors';
import { authenticate, authOf, type AuthContext } from './middleware/auth';
import { memberOrKey } from './middleware/member-auth';
import type { RouteIndex } from './route-index';

/** GA, Beta, Deprecated: the spec's commitments; Management: excluded from tiers (spec, "Versioning" 2). */
export type Stability = 'GA' | 'Beta' | 'Deprecated' | 'Management';
export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
/** `native`: the handler authenticates with the provider's own header (proxies); documented as a key route. */
export type RouteAuth = 'key' | 'admin' | 'public' | 'native';

/** What the OpenAPI document needs of a route (also the shape of hand-listed, unconverted routes). */
export interface RouteDoc {
  method: Method;
  /** Koa style, `:param` segments. */
  path: string;
  stability: Stability;
  /** Release label from the spec's table; absent where the spec assigns none (tier decided here). */
  since?: string;
  auth: RouteAuth;
  /**
   * A `key` or `admin` route that also accepts a member's user access token, with the project named
   * in the Tollgate-Project header (the dashboard): viewers may call `key` routes, admins `admin` ones.
   */
  members?: boolean;
  summary: string;
  tag: string;
  body?: z.ZodType;
  query?: z.ZodType;
  /** Success status; 200 unless given. */
  status?: number;
  /** Other success statuses with the same body (for example 200 on an idempotent repeat of a 201). */
  alsoStatus?: number[];
  /** Success content type when it is not JSON. */
  contentType?: string;
  /** Schema of the success body (JSON routes); absent: documented as any JSON (test/unit/api/response-coverage lists them). */
  response?: z.ZodType;
  /** Failure bodies when they are not only the error object (executions answer failures with an envelope). */
  errorBody?: z.ZodType;
  /** Error bodies are provider-native (proxies), not the spec's error object. */
  nativeErrors?: boolean;
  /** Deprecated in the table itself (configuration can deprecate more: TOLLGATE_DEPRECATED_ROUTES). */
  deprecated?: Omit<DeprecationNotice, 'route'>;
}

/** Koa's context with the router's path parameters. */
export type RouteContext = ParameterizedContext & { params: Record<string, string> };
export type RouteHandler<C> = (ctx: RouteContext, c: C & { deps: ApiDeps }) => unknown;

export interface RouteDef<C> extends Omit<RouteDoc, 'tag'> {
  /** The family's tag unless given. */
  tag?: string;
  /** Mount on this pattern instead of `path` (proxies: the native path may contain `/`). */
  pattern?: RegExp;
  handler: RouteHandler<C>;
}

/**
 * The handler of a route that answers one read of the key's project: `read` gets the family's
 * context, the project and the route's path parameters.
 */
export function projectRead<C>(read: (c: C & { deps: ApiDeps }, projectId: string, params: Record<string, string>) => Promise<unknown>): RouteHandler<C> {
  return async (ctx, c) => {
    ctx.body = await read(c, authOf(ctx).projectId, ctx.params);
  };
}

/**
 * The handler of a route that acts in the key's project on a JSON body: `write` gets the family's
 * context, the caller, the body as `schema` parses it and the route's path parameters.
 */
export function projectWrite<C, S extends z.ZodType>(
  schema: S,
  write: (c: C & { deps: ApiDeps }, auth: AuthContext, input: z.infer<S>, params: Record<string, string>) => Promise<unknown>,
): RouteHandler<C> {
  return async (ctx, c) => {
    ctx.body = await write(c, authOf(ctx), parseOrThrow(schema, ctx.request.body ?? {}), ctx.params);
  };
}

export interface RouteFamily {
  tag: string;
  docs: RouteDoc[];
  mount(router: RouteIndex, deps: ApiDeps): void;
}

/** Registers entries in table order: fixed paths before `:param` ones that could capture them. */
export function routeFamily<C extends object>(tag: string, context: (deps: ApiDeps) => C, routes: RouteDef<C>[]): RouteFamily {
  return {
    tag,
    docs: routes.map(({ handler: _h, pattern: _p, ...doc }) => ({ tag, ...doc })),
    mount(router, deps) {
      const c = { ...context(deps), deps };
      const auth: Record<RouteAuth, Middleware | null> = {
        public: null,
        native: null,
        key: authenticate(deps.keys),
        admin: authenticate(deps.keys, { scope: 'admin' }),
      };
      const notices = Array.isArray(deps.config.deprecatedRoutes) ? deps.config.deprecatedRoutes : [];
      const configured = new Map(notices.map((n) => [n.route, n]));
      for (const route of routes) {
        const notice = configured.get(`${route.method.toUpperCase()} ${route.path}`) ?? (route.deprecated ? { route: route.path, ...route.deprecated } : undefined);
        // The documented path names the route in logs, metrics and traces (a proxy's pattern is a RegExp).
        const chain: Middleware[] = [
          async (ctx, next) => {
            ctx.state.routePath = route.path;
            await next();
          },
        ];
        if (notice) chain.push(deprecationHeaders(notice));
        const guard = route.members && (route.auth === 'key' || route.auth === 'admin') ? memberOrKey(deps, route.auth, auth[route.auth]!) : auth[route.auth];
        if (guard) chain.push(guard);
        chain.push(async (ctx) => {
          // The declared success status answers unless the handler sets another.
          if (route.status) ctx.status = route.status;
          await route.handler(ctx as RouteContext, c);
        });
        router.register(route.path, [route.method.toUpperCase()], chain, { pattern: route.pattern });
      }
    },
  };
}
