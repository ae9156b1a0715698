/**
 * The operator dashboard at /dashboard: the single-page app built from dashboard/ by
 * `npm run build` (Vite) into dashboard/dist, served from disk. Hashed assets are cached for a
 * year; any other path under /dashboard answers index.html so the app's own routes survive a
 * reload. Without a build, /dashboard says how to make one.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { RouteIndex } from './route-index';
import type { ParameterizedContext } from 'koa';
import { send } from '@koa/send';

// This file runs as src/api/dashboard.ts from source and as dist/src/api/dashboard.js compiled; the
// dashboard build is under the project root either way.
const PROJECT_ROOT = path.resolve(__dirname, __filename.endsWith('.ts') ? '../..' : '../../..');
export const DASHBOARD_DIST = path.join(PROJECT_ROOT, 'dashboard', 'dist');

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

export function registerDashboard(router: RouteIndex, dist = DASHBOARD_DIST): void {
  const serveIndex = async (ctx: ParameterizedContext) => {
    ctx.set(SECURITY_HEADERS);
    if (!fs.existsSync(path.join(dist, 'index.html'))) {
      ctx.status = 503;
      ctx.type = 'text/plain; charset=utf-8';
      ctx.body = 'The dashboard is not built: run `npm run build` (or `npm run dev`, which builds it).\n';
      return;
    }
    ctx.set('cache-control', 'no-cache');
    await send(ctx, 'index.html', { root: dist });
  };
  router.get('/dashboard', serveIndex);
  router.get('/dashboard/assets/:file', async (ctx) => {
    ctx.set(SECURITY_HEADERS);
    // send() resolves inside root and refuses traversal; file names carry a content hash.
    const served = await send(ctx, path.posix.join('assets', ctx.params.file), { root: dist, immutable: true, maxage: 365 * 24 * 3600 * 1000 }).catch(
      (err: { status?: number }) => {
        if (err.status === 404 || err.status === 400 || err.status === 403) return undefined;
        throw err;
      },
    );
    if (!served) ctx.status = 404;
  });
  router.get('/dashboard/*rest', serveIndex);
}
