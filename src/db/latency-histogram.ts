/**
 * The call rollup's latency histogram (migration 0230): fixed log-scale buckets, eight per
 * doubling. Bucket 0 holds durations under 1 ms; bucket i ≥ 1 holds the whole milliseconds in
 * [LATENCY_BOUNDS[i - 1], LATENCY_BOUNDS[i]) (SQL's `width_bucket(duration_ms, bounds)`), the last
 * bucket everything from its lower bound up. Bounds are ceil(2^(k/8)) without repeats, so under
 * ~11 ms every millisecond is its own bucket and above it a bucket spans a factor of at most
 * 2^(1/8).
 *
 * Resolution: a duration is read back as its bucket's geometric midpoint, within a factor of
 * 2^(1/16) of every duration in the bucket (±4.4 %); a percentile interpolated between two such
 * values (as `percentile_cont`) is within the same factor of the exact one.
 */
function bounds(): number[] {
  const out: number[] = [];
  // Up to 2^30.875 ms: int4 holds every bound (duration_ms is int4).
  for (let k = 0; k < 8 * 31; k++) {
    const b = Math.ceil(2 ** (k / 8));
    if (out[out.length - 1] !== b) out.push(b);
  }
  return out;
}

export const LATENCY_BOUNDS: readonly number[] = bounds();

/** The relative error bound of a duration or percentile read from the histogram. */
export const LATENCY_RESOLUTION = 2 ** (1 / 16) - 1;

/** The value a bucket's durations are read back as. */
export function bucketValue(bucket: number): number {
  if (bucket <= 0) return 0;
  const lo = LATENCY_BOUNDS[bucket - 1];
  if (bucket >= LATENCY_BOUNDS.length) return lo;
  return Math.sqrt(lo * (LATENCY_BOUNDS[bucket] - 1));
}

/** Counts per bucket. */
export type LatencyHistogram = Map<number, number>;

/** Adds `count` calls in `bucket`. */
export function addToHistogram(h: LatencyHistogram, bucket: number, count: number): void {
  if (count !== 0) h.set(bucket, (h.get(bucket) ?? 0) + count);
}

/**
 * The q-quantile (0–1) as `percentile_cont` computes it on the durations read back as their
 * buckets' values; null for an empty histogram.
 */
export function histogramPercentile(h: LatencyHistogram, q: number): number | null {
  const buckets = [...h.entries()].filter(([, n]) => n > 0).sort((a, b) => a[0] - b[0]);
  const total = buckets.reduce((s, [, n]) => s + n, 0);
  if (total === 0) return null;
  const pos = q * (total - 1);
  const at = (rank: number) => {
    let seen = 0;
    for (const [b, n] of buckets) {
      seen += n;
      if (rank < seen) return bucketValue(b);
    }
    return bucketValue(buckets[buckets.length - 1][0]);
  };
  const lo = Math.floor(pos);
  const v = at(lo);
  return lo === pos ? v : v + (pos - lo) * (at(lo + 1) - v);
}
