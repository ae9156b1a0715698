/**
 * Node flags for running Tollgate's TypeScript directly: `npm run dev`'s emulator, the test
 * suite's and the chaos harness's Tollgate processes, the benches' BENCH_TSX=1 (`npm run dev`'s and
 * `npm start`'s Tollgate process runs a transpiled copy instead, scripts/lib/dev-build.ts).
 * `--require tsx/cjs`, not `--import tsx`: the code is CommonJS, and `--import` also registers
 * tsx's ESM hooks, which Node runs in a loader thread of their own (~20 MiB that the process keeps).
 * Not the tsx CLI either: it keeps a second Node process (~50 MiB) alive as a wrapper. Then
 * dependencies' source maps are left unread (no-dependency-source-maps.cjs).
 */
import path from 'node:path';

// Resolved here, so the flags work from any working directory.
export const SOURCE_NODE_ARGS = ['--require', require.resolve('tsx/cjs'), '--require', path.join(__dirname, 'no-dependency-source-maps.cjs')];
