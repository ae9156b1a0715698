/**
 * `npm run bench:log`: reading, chaining, proving and exporting what calls leave (not a test).
 * Modes (`npm run bench:log -- --help`):
 *
 *   (default)      the request log's pages and the Overview's aggregates on 5 million calls (log/request-log.ts)
 *   --pages        every HTTP request of the dashboard's pages on a grown database, p50/p95 (log/pages.ts)
 *   --sequencer    the sequencer's CPU per chained entry (log/sequencer.ts)
 *   --checkpoint   a signed checkpoint's CPU per new entry (log/checkpoint.ts)
 *   --export       a compliance export's events part and its finalize (log/export.ts)
 *   --retention    integrity verify and retention's steps on a loaded call history (log/retention.ts)
 */
import { runModes } from './lib/modes';

runModes(
  'bench:log',
  {
    'request-log': { about: "request-log pages and Overview aggregates on BENCH_ROWS calls", run: async () => (await import('./log/request-log')).run() },
    pages: { about: "every HTTP request of the dashboard's pages on BENCH_CALLS loaded calls, p50/p95 per request", run: async () => (await import('./log/pages')).run() },
    sequencer: { about: "the sequencer's CPU per chained entry, process and PostgreSQL", run: async () => (await import('./log/sequencer')).run() },
    checkpoint: { about: "a checkpoint's CPU per new entry and the event loop's longest wait", run: async () => (await import('./log/checkpoint')).run() },
    export: { about: "an export's events part per event, and its finalize", run: async () => (await import('./log/export')).run() },
    retention: { about: 'integrity verify and retention of a day on BENCH_CALLS loaded calls, per record and per statement', run: async () => (await import('./log/retention')).run() },
  },
  'request-log',
);
