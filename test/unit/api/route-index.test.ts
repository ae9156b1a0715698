/**
 * The API's routes per path prefix (src/api/route-index.ts): every request resolves to the route,
 * and a wrong method to the allowed methods, that one @koa/router holding every route resolves it
 * to, for every documented route and the pages outside the table; and the dispatch itself runs a
 * group's route before the rest's, falls through to the rest, answers 405 across routers and
 * matches case-insensitively.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import type { ApiDeps } from '../../../src/api/deps';
import { registerDashboard } from '../../../src/api/dashboard';
import { registerDocsPage } from '../../../src/api/docs-page';
import { openApiRoutes } from '../../../src/api/openapi';
import { requestPrefix, RouteIndex, routePrefix } from '../../../src/api/route-index';
import { ROUTE_TABLE } from '../../../src/api/routes';
import { registerMetricsRoute } from '../../../src/api/routes/status';

// Route registration only keeps deps in closures (test/unit/api/deprecation.test.ts does the same).
function standInDeps(): ApiDeps {
  const standIn: unknown = new Proxy(function () {}, {
    get: (_t, k) => (k === 'then' ? undefined : standIn),
    apply: () => standIn,
  });
  const config = new Proxy({}, { get: (_t, k) => (k === 'deprecatedRoutes' ? [] : standIn) });
  return new Proxy({}, { get: (_t, k) => (k === 'config' ? config : standIn) }) as ApiDeps;
}

/** Every route the API registers, in createApp's order (src/api/app.ts). */
function registerAll(routes: RouteIndex): RouteIndex {
  const deps = standInDeps();
  for (const family of [...ROUTE_TABLE, openApiRoutes]) family.mount(routes, deps);
  registerMetricsRoute(routes, deps);
  registerDocsPage(routes);
  registerDashboard(routes);
  return routes;
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A request path for a documented Koa path: each parameter filled, a wildcard as two segments. */
function concrete(path: string): string {
  return path.replace(/:[a-z_]+/g, (p) => `${p.slice(1)}-1`).replace(/\*[a-z_]+/g, 'a/b');
}

describe('route index', () => {
  it('names the prefix of a route path and of a request path', () => {
    expect(routePrefix('/v1/permits/:permit_id')).toBe('/v1/permits');
    expect(routePrefix('/v1/execute')).toBe('/v1/execute');
    expect(routePrefix('/docs/assets/:file')).toBe('/docs/assets');
    expect(routePrefix('/metrics')).toBeNull();
    expect(routePrefix('/dashboard/*rest')).toBeNull();
    expect(routePrefix('/v1/:family/x')).toBeNull();
    expect(requestPrefix('/v1/proxy/openai/v1/chat/completions')).toBe('/v1/proxy');
    expect(requestPrefix('/V1/Executions/')).toBe('/v1/executions');
    expect(requestPrefix('/v1/execute')).toBe('/v1/execute');
    expect(requestPrefix('/metrics')).toBeNull();
    expect(requestPrefix('/v1/')).toBeNull();
    expect(requestPrefix('//x')).toBeNull();
  });

  it('resolves every documented route and page as one router holding all of them does', () => {
    const grouped = registerAll(new RouteIndex());
    const single = registerAll(new RouteIndex({ grouped: false }));
    const paths = new Set<string>(['/metrics', '/docs', '/docs/init.js', '/docs/assets/x.js', '/dashboard', '/dashboard/assets/x.js', '/dashboard/a/b', '/v1/nothing/here', '/', '/v1']);
    for (const doc of [...ROUTE_TABLE, openApiRoutes].flatMap((f) => f.docs)) {
      const p = concrete(doc.path);
      paths.add(p);
      paths.add(`${p}/`);
      paths.add(p.toUpperCase());
    }
    for (const provider of ['openai', 'anthropic', 'google', 'deepseek', 'mistral']) paths.add(`/v1/proxy/${provider}/v1/chat/completions`);
    let routed = 0;
    for (const path of paths) {
      for (const method of METHODS) {
        const expected = single.resolve(method, path);
        expect({ method, path, ...grouped.resolve(method, path) }).toEqual({ method, path, ...expected });
        if (expected.route !== null) routed++;
      }
    }
    // The comparison covered the table, not only misses: every documented route resolved somewhere.
    expect(routed).toBeGreaterThan([...ROUTE_TABLE, openApiRoutes].flatMap((f) => f.docs).length);
  });

  it('dispatches to the group, falls through to the rest, and answers 405 across routers', async () => {
    const routes = new RouteIndex();
    const answer = (name: string) => (ctx: Koa.Context) => {
      ctx.body = { route: name, params: (ctx as unknown as { params: Record<string, string> }).params };
    };
    routes.register('/v1/things/export', ['GET'], [answer('export')]);
    routes.register('/v1/things/:id', ['GET'], [answer('thing')]);
    routes.register('/v1/things/:id', ['PATCH'], [answer('patch')]);
    routes.register('/v1/proxy/x/:native_path', ['POST'], [answer('proxy')], { pattern: /^\/v1\/proxy\/x(\/.*)$/ });
    routes.get('/status', answer('status'));
    routes.register('/v1/:family/count', ['POST'], [answer('count')]);
    // Registered last, so one router would try it after every route above: so must the index.
    routes.get('/v1/*rest', answer('catch-all'));
    const app = new Koa();
    app.use(routes.routes());
    app.use(routes.allowedMethods({ throw: false }));
    expect(() => routes.get('/late', answer('late'))).toThrow(/registered after routes/);

    const server = http.createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const call = async (method: string, path: string) => {
      const res = await fetch(`${base}${path}`, { method });
      return { status: res.status, allow: res.headers.get('allow'), body: res.status === 200 ? ((await res.json()) as { route: string; params: Record<string, string> }) : null };
    };
    try {
      expect((await call('GET', '/v1/things/export')).body?.route).toBe('export');
      expect(await call('GET', '/v1/things/t1')).toMatchObject({ status: 200, body: { route: 'thing', params: { id: 't1' } } });
      expect((await call('GET', '/V1/THINGS/t1')).body?.route).toBe('thing');
      expect((await call('POST', '/v1/proxy/x/v1/chat/completions')).body?.route).toBe('proxy');
      expect((await call('GET', '/status')).body?.route).toBe('status');
      // Matched by path in the group but not by method: on to the rest, which has the route.
      expect(await call('POST', '/v1/things/count')).toMatchObject({ status: 200, body: { route: 'count', params: { family: 'things' } } });
      // Neither router has the method: 405 with every matching route's methods, the rest's included.
      expect(await call('DELETE', '/v1/things/t1')).toMatchObject({ status: 405, allow: 'HEAD, GET, PATCH' });
      expect((await call('GET', '/v1/unknown/x')).body?.route).toBe('catch-all');
      expect((await call('GET', '/elsewhere')).status).toBe(404);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
