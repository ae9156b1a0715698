/**
 * The operator dashboard's build (dashboard/ → dashboard/dist, Vite). `npm run build` always
 * builds it; `npm run dev` and the browser tests build it only when a source is newer than the
 * last build (about 2 s on this machine).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');
const dashboardDir = path.join(root, 'dashboard');
const builtIndex = path.join(dashboardDir, 'dist', 'index.html');

function newestMtime(p: string): number {
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...fs.readdirSync(p).map((f) => newestMtime(path.join(p, f))));
}

export function dashboardStale(): boolean {
  if (!fs.existsSync(builtIndex)) return true;
  const built = fs.statSync(builtIndex).mtimeMs;
  const sources = [path.join(dashboardDir, 'src'), path.join(dashboardDir, 'index.html'), path.join(dashboardDir, 'vite.config.mts'), path.join(root, 'sdk', 'src')];
  return sources.some((s) => newestMtime(s) > built);
}

export function buildDashboard(log: (msg: string) => void): void {
  log('[tollgate] building the dashboard (Vite)…');
  const vite = path.join(root, 'node_modules', '.bin', 'vite');
  const r = spawnSync(vite, ['build', '--config', path.join(dashboardDir, 'vite.config.mts'), '--logLevel', 'warn'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`the dashboard build failed (exit ${r.status})`);
}

export function ensureDashboard(log: (msg: string) => void): void {
  if (dashboardStale()) buildDashboard(log);
}
