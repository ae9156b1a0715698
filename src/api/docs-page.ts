/**
 * The reference page: GET /docs, Swagger UI served from node_modules/swagger-ui-dist (no CDN),
 * reading GET /v1/openapi.json. Not an API route, so not in the document.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { RouteIndex } from './route-index';

const SWAGGER_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
};

const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Tollgate API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script></body></html>`;

// A separate file, not inline, so a strict Content-Security-Policy (script-src 'self') holds.
const DOCS_INIT = `window.ui = SwaggerUIBundle({ url: '/v1/openapi.json', dom_id: '#reference', deepLinking: true, tryItOutEnabled: false });`;

/** GET /docs and its assets: public, no key. */
export function registerDocsPage(router: RouteIndex): void {
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Content-Security-Policy', "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'");
    ctx.body = DOCS_HTML;
  });
  router.get('/docs/init.js', (ctx) => {
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.body = DOCS_INIT;
  });
  router.get('/docs/assets/:file', (ctx) => {
    const type = Object.hasOwn(ASSETS, ctx.params.file) ? ASSETS[ctx.params.file] : undefined;
    if (!type) return; // 404 through the router's fallthrough
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = fs.createReadStream(path.join(SWAGGER_DIR, ctx.params.file));
  });
}
