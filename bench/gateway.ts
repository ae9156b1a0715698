/**
 * `npm run bench:gateway`: Tollgate under load over HTTP, with the provider emulator upstream (not
 * a test). Modes (`npm run bench:gateway -- --help`):
 *
 *   (default)          Tollgate's paths against Portkey's gateway, side by side (gateway/portkey.ts)
 *   --ab <checkout>    two builds side by side, rounds interleaved (gateway/ab.ts)
 *   --memory           where the resident memory goes under the same load (gateway/memory.ts)
 *   --allocation       what a governed call allocates, by function (gateway/allocation.ts)
 *   --jobs             async jobs and their webhook deliveries (gateway/jobs.ts)
 *   --stall            small calls' delay while the largest accepted prompt runs (gateway/stall.ts)
 */
import { runModes } from './lib/modes';

runModes(
  'bench:gateway',
  {
    portkey: { about: "Tollgate's paths against Portkey's gateway, side by side", run: async () => (await import('./gateway/portkey')).run() },
    ab: { about: 'two compiled builds side by side (the other checkout, built)', usage: '<checkout>', run: async (args) => (await import('./gateway/ab')).run(args) },
    memory: { about: "Tollgate's RSS and V8 heap after each load phase", run: async () => (await import('./gateway/memory')).run() },
    allocation: { about: 'bytes a governed call allocates, by function and file', run: async () => (await import('./gateway/allocation')).run() },
    jobs: { about: 'async jobs and their webhook deliveries, every one verified', run: async () => (await import('./gateway/jobs')).run() },
    stall: { about: "small calls' delay while a request carrying the largest accepted prompt runs", run: async () => (await import('./gateway/stall')).run() },
  },
  'portkey',
);
