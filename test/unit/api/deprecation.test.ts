/**
 * Deprecation notices (src/api/deprecation.ts): a route deprecated through configuration
 * (TOLLGATE_DEPRECATED_ROUTES, the path tests and operators use) keeps answering, with
 * Deprecation (RFC 9745), Sunset (RFC 8594) and Link headers, and is marked in the document.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../../src/api/app';
import type { ApiDeps } from '../../../src/api/deps';
import { deprecationHeaderValues } from '../../../src/api/deprecation';
import { ConfigError, loadConfig } from '../../../src/config';

const NOTICE = {
  route: 'GET /v1/openapi.json',
  deprecated_at: '2026-07-01T00:00:00Z',
  sunset: '2027-01-15T12:00:00Z',
  doc: 'https://tollgate.example/changelog#openapi-v2',
  successor: '/v2/openapi.json',
};
const baseEnv = { DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db' };

// Route registration only stores deps in closures; a recursive stand-in is enough for public routes.
function appWith(deprecatedRoutes: unknown[]) {
  const standIn: unknown = new Proxy(function () {}, {
    get: (_t, k) => (k === 'then' ? undefined : standIn),
    apply: () => standIn,
  });
  const config = new Proxy({}, { get: (_t, k) => (k === 'deprecatedRoutes' ? deprecatedRoutes : k === 'bodyLimitBytes' ? 1 << 20 : standIn) });
  const deps = new Proxy({}, { get: (_t, k) => (k === 'config' ? config : standIn) });
  return createApp(deps as ApiDeps);
}

async function get(app: ReturnType<typeof createApp>, path: string) {
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`);
    return { status: res.status, headers: res.headers, json: (await res.json()) as { paths: Record<string, Record<string, Record<string, unknown>>> } };
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('deprecated routes', () => {
  it('parses TOLLGATE_DEPRECATED_ROUTES and rejects a malformed value by name', () => {
    expect(loadConfig({ ...baseEnv, TOLLGATE_DEPRECATED_ROUTES: JSON.stringify([NOTICE]) }).deprecatedRoutes).toEqual([NOTICE]);
    expect(loadConfig(baseEnv).deprecatedRoutes).toEqual([]);
    expect(() => loadConfig({ ...baseEnv, TOLLGATE_DEPRECATED_ROUTES: '[{"route":"/v1/x"}]' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...baseEnv, TOLLGATE_DEPRECATED_ROUTES: 'not json' })).toThrow(/TOLLGATE_DEPRECATED_ROUTES/);
  });

  it('formats Deprecation as an RFC 9745 structured date and Sunset as an HTTP-date', () => {
    expect(deprecationHeaderValues(NOTICE)).toEqual({
      deprecation: `@${Date.UTC(2026, 6, 1) / 1000}`,
      sunset: 'Fri, 15 Jan 2027 12:00:00 GMT',
      link: '<https://tollgate.example/changelog#openapi-v2>; rel="deprecation"; type="text/html", </v2/openapi.json>; rel="successor-version"',
    });
    expect(deprecationHeaderValues({ deprecated_at: NOTICE.deprecated_at, sunset: NOTICE.sunset }).link).toBe('</docs>; rel="deprecation"; type="text/html"');
  });

  it('answers a route deprecated through configuration with the headers, and still serves it', async () => {
    const res = await get(appWith([NOTICE]), '/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('deprecation')).toBe('@1782864000');
    expect(res.headers.get('sunset')).toBe('Fri, 15 Jan 2027 12:00:00 GMT');
    expect(res.headers.get('link')).toContain('rel="deprecation"');
    expect(res.headers.get('link')).toContain('</v2/openapi.json>; rel="successor-version"');
    // The document marks it: deprecated, x-stability Deprecated, sunset and successor.
    expect(res.json.paths['/v1/openapi.json']!.get).toEqual(
      expect.objectContaining({ deprecated: true, 'x-stability': 'Deprecated', 'x-sunset': '2027-01-15T12:00:00.000Z', 'x-successor': '/v2/openapi.json' }),
    );
  });

  it('leaves routes without a notice alone', async () => {
    const res = await get(appWith([]), '/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('deprecation')).toBeNull();
    expect(res.headers.get('sunset')).toBeNull();
    expect(res.json.paths['/v1/openapi.json']!.get!.deprecated).toBeUndefined();
  });
});
