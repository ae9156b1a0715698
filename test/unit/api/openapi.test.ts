/**
 * The OpenAPI document (src/api/openapi.ts) against the routes the app really registers: the app's
 * routers (src/api/route-index.ts) are walked, so a route added outside the route table (and not in
 * OPENAPI_EXCLUDED) fails here, and so does an entry whose route is gone.
 */
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../../src/api/app';
import type { ApiDeps } from '../../../src/api/deps';
import type { RouteIndex } from '../../../src/api/route-index';
import { buildOpenApiDocument, documentedRoutes, OPENAPI_EXCLUDED, openApiPath } from '../../../src/api/openapi';

// Route registration only stores deps in closures; a recursive stand-in is enough to build the app.
const standIn: unknown = new Proxy(function () {}, {
  get: (_t, k) => (k === 'then' ? undefined : k === 'bodyLimitBytes' ? 1 << 20 : standIn),
  apply: () => standIn,
});
const app = createApp(standIn as ApiDeps);
const routes = (app.middleware.find((m) => (m as { routeIndex?: RouteIndex }).routeIndex) as unknown as { routeIndex: RouteIndex }).routeIndex;
type Doc = { openapi: string; paths: Record<string, Record<string, Record<string, unknown>>>; components: Record<string, Record<string, unknown>> };
const doc = buildOpenApiDocument() as unknown as Doc;
const METHODS = ['get', 'post', 'patch', 'put', 'delete'];

function templateRegex(template: string): RegExp {
  const src = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part === '{native_path}' ? '.+' : part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${src}$`);
}

describe('OpenAPI document', () => {
  it('covers every registered /v1 route (string and pattern routes)', () => {
    const missing: string[] = [];
    let checked = 0;
    for (const layer of routes.layers()) {
      const methods = layer.methods.map((m) => m.toLowerCase()).filter((m) => METHODS.includes(m));
      const p = layer.path as string | RegExp;
      for (const method of methods) {
        if (typeof p === 'string') {
          if (!p.startsWith('/v1/')) continue;
          checked++;
          if (OPENAPI_EXCLUDED.includes(`${method.toUpperCase()} ${p}`)) continue;
          if (!doc.paths[openApiPath(p)]?.[method]) missing.push(`${method.toUpperCase()} ${p}`);
        } else {
          // A pattern route (the proxies: the native path may contain '/'): a sample path must be documented.
          const sample = p.source.replace(/\\\//g, '/').replace(/^\^/, '').replace(/\$$/, '').replace('(/.*)', '/chat/completions');
          expect(p.test(sample)).toBe(true);
          checked++;
          const documented = Object.entries(doc.paths).some(([t, ops]) => ops[method] && templateRegex(t).test(sample));
          if (!documented) missing.push(`${method.toUpperCase()} ${sample} (pattern ${p.source})`);
        }
      }
    }
    expect(checked).toBeGreaterThan(60);
    expect(missing).toEqual([]);
  });

  it('documents no route that is not registered', () => {
    const stale: string[] = [];
    for (const [template, ops] of Object.entries(doc.paths)) {
      const sample = template.replace('{native_path}', 'chat/completions').replace(/\{[^}]+\}/g, 'x1');
      for (const method of Object.keys(ops)) {
        if (routes.resolve(method.toUpperCase(), sample).route === null) stale.push(`${method.toUpperCase()} ${template}`);
      }
    }
    expect(stale).toEqual([]);
  });

  it('validates against the OpenAPI 3.1 schema', () => {
    // @seriousme/openapi-schema-validator is ESM-only: validate in a child Node process.
    const validator = require.resolve('@seriousme/openapi-schema-validator/index.js');
    const script = `import { Validator } from ${JSON.stringify(validator)};
      let s = ''; for await (const c of process.stdin) s += c;
      const v = new Validator(); const r = await v.validate(JSON.parse(s));
      process.stdout.write(JSON.stringify({ version: v.version, ...r }));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { input: JSON.stringify(doc), encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ version: '3.1', valid: true });
  });

  it('is OpenAPI 3.1 with tiers, the bearer scheme and the error object', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes!.bearerAuth).toEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }));
    expect(doc.components.schemas!.Error).toEqual(
      expect.objectContaining({ type: 'object', required: ['error'] }),
    );
    for (const [template, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        expect([`${method} ${template}`, op['x-stability']]).toEqual([`${method} ${template}`, expect.stringMatching(/^(GA|Beta|Deprecated|Management)$/)]);
        expect(op.responses).toBeDefined();
      }
    }
    // Tiers and release labels from the spec's table ("Route stability tiers").
    expect(doc.paths['/v1/executions']!.post).toEqual(expect.objectContaining({ 'x-stability': 'GA', 'x-since': 'v1.0' }));
    expect(doc.paths['/v1/execute']!.post).toEqual(expect.objectContaining({ 'x-stability': 'Beta', 'x-since': 'v1.3' }));
    expect(doc.paths['/v1/permits/dry-run']!.post).toEqual(expect.objectContaining({ 'x-stability': 'Beta', 'x-since': 'v1.2' }));
    expect(doc.paths['/v1/proxy/deepseek/{native_path}']!.post).toEqual(expect.objectContaining({ 'x-stability': 'Beta', 'x-since': 'v1.5' }));
    expect(doc.paths['/v1/proxy/anthropic/{native_path}']!.post).toEqual(expect.objectContaining({ 'x-stability': 'GA', 'x-since': 'v1.1' }));
    expect(doc.paths['/v1/public/status/summary']!.get!.security).toEqual([]);
    expect(doc.paths['/v1/permits']!.get!.security).toEqual([{ bearerAuth: [] }]);
    // Request bodies are the zod schemas the routes parse with.
    const permitBody = (doc.paths['/v1/permits']!.post!.requestBody as { content: Record<string, { schema: { properties: Record<string, unknown> } }> }).content[
      'application/json'
    ]!.schema;
    expect(Object.keys(permitBody.properties)).toEqual(expect.arrayContaining(['operation', 'provider', 'model', 'estimated_input_tokens']));
    expect(documentedRoutes().filter((r) => r.stability === 'GA').length).toBeGreaterThanOrEqual(19);
  });

  it('serves the document and the reference page without a key, assets from node_modules', async () => {
    const server = http.createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const json = await fetch(`${base}/v1/openapi.json`);
      expect(json.status).toBe(200);
      expect(((await json.json()) as Doc).paths['/v1/executions']).toBeDefined();
      const page = await fetch(`${base}/docs`);
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toContain('/docs/assets/swagger-ui-bundle.js');
      expect(html).not.toMatch(/https?:\/\//);
      const bundle = await fetch(`${base}/docs/assets/swagger-ui-bundle.js`);
      expect(bundle.status).toBe(200);
      expect((await bundle.text()).length).toBeGreaterThan(100_000);
      expect((await fetch(`${base}/docs/init.js`)).status).toBe(200);
      expect((await fetch(`${base}/docs/assets/package.json`)).status).toBe(404);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
