// The operator dashboard, built by `npm run build` into dashboard/dist and served by Tollgate at
// /dashboard (src/api/dashboard.ts). `npx vite --config dashboard/vite.config.ts` serves it with hot
// reload against a Tollgate on :8080.
import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';

export default defineConfig({
  root: import.meta.dirname,
  base: '/dashboard/',
  plugins: [preact()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 600 },
  server: { proxy: { '/v1': 'http://127.0.0.1:8080' } },
});
