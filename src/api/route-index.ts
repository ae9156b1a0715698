/**
 * The API's routes held in one @koa/router per path prefix instead of one router for all of them.
 * @koa/router tests every route's regular expression against every request; with the table at
 * ~120 routes that took 57–66 µs of each governed call at one request in flight (the expressions
 * run cold between requests; docs/decisions/router-per-prefix.md). Here a route whose first two
 * path segments are fixed (`/v1/proxy/…`, `/v1/permits/…`, `/docs/assets/…`) goes in the router
 * of that prefix; every other one (`/metrics`, `/dashboard/*rest`) goes in the rest. A request runs
 * the router of its own first two segments, then, when nothing there matched, the rest.
 *
 * Routes keep their registration order within a router, and a grouped route is tried before the
 * rest, which is the table's order (fixed paths before `:param` ones that could capture them:
 * test/unit/api/route-index.test.ts checks that every route resolves as one router resolved it).
 * Matching stays case-insensitive, as @koa/router's paths are: the prefix is compared lowercased.
 */
import Router, { type AllowedMethodsOptions, type Layer, type LayerOptions, type RouterMiddleware } from '@koa/router';

type RouterDispatch = ReturnType<Router['routes']>;

export class RouteIndex {
  private readonly groups = new Map<string, Router>();
  private readonly rest = new Router();
  private sealed = false;

  /** `grouped: false` keeps every route in one router, as @koa/router alone does (for comparison). */
  constructor(private readonly opts: { grouped?: boolean } = {}) {}

  /**
   * Registers a route. `path` is its Koa-style path and chooses its router; `pattern`, when given,
   * is what is matched instead (the proxies' native paths may contain `/`).
   */
  register(path: string, methods: string[], middleware: RouterMiddleware[], opts: { pattern?: RegExp } = {}): void {
    if (this.sealed) throw new Error(`route ${path} registered after routes(): register every route first`);
    const options: LayerOptions = opts.pattern ? { pathAsRegExp: true } : {};
    this.routerFor(path).register(opts.pattern ?? path, methods, middleware, options);
  }

  get(path: string, ...middleware: RouterMiddleware[]): void {
    this.register(path, ['GET'], middleware);
  }

  /** Dispatches a request to its prefix's router, then to the rest. Call once every route is registered. */
  routes(): RouterDispatch {
    this.sealed = true;
    const groups = new Map([...this.groups].map(([prefix, router]) => [prefix, router.routes()]));
    const rest = this.rest.routes();
    const dispatch: RouterDispatch = async (ctx, next) => {
      const prefix = requestPrefix(ctx.path);
      const group = prefix === null ? undefined : groups.get(prefix);
      const toRest = async () => {
        await rest(ctx, next);
      };
      await (group ? group(ctx, toRest) : toRest());
    };
    // As @koa/router's middleware carries its router: tests find the app's routes through it.
    return Object.assign(dispatch, { routeIndex: this });
  }

  /** Every registered route (each router's, grouped ones first; not in registration order). */
  layers(): Layer[] {
    return [...this.groups.values(), this.rest].flatMap((router) => router.stack);
  }

  /** 405 / 501 / OPTIONS from the routes every router matched (`ctx.matched` collects them all). */
  allowedMethods(opts: AllowedMethodsOptions): ReturnType<Router['allowedMethods']> {
    return this.rest.allowedMethods(opts);
  }

  /**
   * What `routes()` does with a request, without running it: the route that would answer (the
   * first one matching path and method, its group's before the rest's) and the methods of every
   * route matching the path (what a 405 lists).
   */
  resolve(method: string, path: string): { route: string | null; methods: string[] } {
    const prefix = requestPrefix(path);
    const routers = [prefix === null ? undefined : this.groups.get(prefix), this.rest].filter((r): r is Router => r !== undefined);
    let route: string | null = null;
    const methods = new Set<string>();
    for (const router of routers) {
      const m = router.match(path, method);
      if (route === null && m.route) route = String(m.pathAndMethod.find((l) => l.methods.length > 0)?.path);
      for (const layer of m.path) for (const verb of layer.methods) methods.add(verb);
    }
    return { route, methods: [...methods].sort() };
  }

  private routerFor(path: string): Router {
    const prefix = this.opts.grouped === false ? null : routePrefix(path);
    if (prefix === null) return this.rest;
    let router = this.groups.get(prefix);
    if (!router) {
      router = new Router();
      this.groups.set(prefix, router);
    }
    return router;
  }
}

/** `/a/b` of a route path whose first two segments are fixed text; else null. */
export function routePrefix(path: string): string | null {
  const [empty, first, second] = path.split('/', 3);
  const fixed = (s: string | undefined) => s !== undefined && s !== '' && !/[:*?(){}]/.test(s);
  return empty === '' && fixed(first) && fixed(second) ? `/${first}/${second}`.toLowerCase() : null;
}

/** `/a/b` of a request path (lowercased); null when it has fewer than two segments. */
export function requestPrefix(path: string): string | null {
  const second = path.indexOf('/', 1);
  if (path[0] !== '/' || second <= 1) return null;
  const third = path.indexOf('/', second + 1);
  const prefix = third === -1 ? path : path.slice(0, third);
  return prefix.length > second + 1 ? prefix.toLowerCase() : null;
}
