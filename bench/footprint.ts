/**
 * `npm run bench:footprint`: what one governed call costs PostgreSQL (not a test). Modes
 * (`npm run bench:footprint -- --help`):
 *
 *   (default)     bytes and row writes each allowed call leaves, table by table (footprint/rows.ts)
 *   --pipeline    PostgreSQL CPU and WAL per call of the pipeline's two statements (footprint/pipeline.ts)
 */
import { runModes } from './lib/modes';

runModes(
  'bench:footprint',
  {
    rows: { about: 'bytes and row writes per allowed call, table by table', run: async () => (await import('./footprint/rows')).run() },
    pipeline: { about: "PostgreSQL CPU, WAL and function time per call of govern and record", run: async () => (await import('./footprint/pipeline')).run() },
  },
  'rows',
);
