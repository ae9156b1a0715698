/**
 * V8 lets the old generation grow to up to four times what survived the last full collection
 * when collecting is cheap, which a gateway's short-lived request objects make it: under the
 * bench's load the heap reached 263 MiB with about 60 MiB live (docs/decisions/heap-growth-cap.md).
 * `--heap-growing-percent` caps that factor (the next full collection starts at live × (1 + p/100))
 * without a hard heap limit, so a larger live set still fits and nothing is killed for it.
 * V8 reads the flag at every collection, so setting it at start-up takes effect.
 */
import v8 from 'node:v8';

export function tuneHeap(growingPercent: number): void {
  if (growingPercent > 0) v8.setFlagsFromString(`--heap-growing-percent=${growingPercent}`);
}

/**
 * glibc gives each thread that allocates its own malloc arena (up to 8 per core), and the Temporal
 * core's Rust threads and libuv's pool each fragment one: ~17–25 MiB of RSS in the process that
 * runs API and worker together, for no throughput (docs/decisions/malloc-arena.md).
 * One arena instead of two: ~10 MiB less again and a narrower spread after load, with no CPU
 * difference measurable (docs/decisions/malloc-arena.md). glibc reads the variable once at
 * process start, so the launchers set it in the child's environment: `npm run dev`, `npm start`,
 * the Docker image, the benches. A value already in the environment wins.
 */
export const MALLOC_ARENA_MAX = '1';
