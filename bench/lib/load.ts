/** Load generation for the benches: autocannon runs (bounded by duration) and timed SSE streams. */
import { postgresCpuMs, processCpuMs } from './cpu';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon: (opts: Record<string, unknown>) => any = require('autocannon');

export interface Run {
  connections: number;
  seconds: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  total: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  /** Response count per status code. */
  statusCodes: Record<string, number>;
}

export interface LoadOptions {
  url: string;
  body: unknown;
  headers: Record<string, string>;
  connections: number;
  seconds: number;
  /** Headers of connection i are `perConnection[i % length]` (e.g. one project's key each). */
  perConnection?: Record<string, string>[];
  /** Per-request timeout, seconds (autocannon counts a timeout as an error). */
  timeoutSeconds?: number;
  /** Send exactly this many requests instead of running for `seconds`. */
  amount?: number;
}

export async function load(o: LoadOptions): Promise<Run> {
  let next = 0;
  const setupClient = o.perConnection
    ? (client: { setHeaders(h: Record<string, string>): void }) => client.setHeaders({ 'content-type': 'application/json', ...o.perConnection![next++ % o.perConnection!.length] })
    : undefined;
  // autocannon's histogram has 1 ms resolution; its 'response' event carries the hrtime duration,
  // so percentiles are taken from those (every response, as autocannon's own histogram does).
  const latencies: number[] = [];
  const instance = autocannon({
    url: o.url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...o.headers },
    body: JSON.stringify(o.body),
    connections: o.connections,
    ...(o.amount ? { amount: o.amount } : { duration: o.seconds }),
    timeout: o.timeoutSeconds ?? 10,
    ...(setupClient ? { setupClient } : {}),
  });
  instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => latencies.push(ms));
  const r = await instance;
  latencies.sort((a, b) => a - b);
  const statusCodes: Record<string, number> = {};
  for (const [code, v] of Object.entries((r.statusCodeStats ?? {}) as Record<string, { count: number }>)) statusCodes[code] = v.count;
  return {
    connections: o.connections,
    seconds: o.seconds,
    rps: r.requests.average,
    p50: latencies.length ? pct(latencies, 50) : NaN,
    p90: latencies.length ? pct(latencies, 90) : NaN,
    p99: latencies.length ? pct(latencies, 99) : NaN,
    max: latencies.length ? latencies[latencies.length - 1] : NaN,
    total: r.requests.total,
    errors: r.errors,
    timeouts: r.timeouts,
    non2xx: r.non2xx,
    statusCodes,
  };
}

/**
 * One streaming POST read to the end; returns the milliseconds from sending the request to the
 * arrival of the chunk in which `marker` first appears (the first data / delta event). Throws on a
 * non-200 answer, a stream without the marker, or after `timeoutMs`.
 */
export async function timeToMarker(url: string, body: unknown, headers: Record<string, string>, marker: string | RegExp, timeoutMs = 30_000): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let first = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (!first && (typeof marker === 'string' ? text.includes(marker) : marker.test(text))) first = performance.now() - t0;
  }
  if (res.status !== 200 || !first) throw new Error(`stream from ${url} failed: ${res.status} ${text.slice(0, 500)}`);
  return first;
}

/** Nearest-rank percentile of an ascending array. */
export const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];

export const median = (xs: number[]): number => pct([...xs].sort((a, b) => a - b), 50);

export interface CpuPerRequest {
  /** CPU ms per request of the process answering (Tollgate, Portkey, or the emulator for the direct path). */
  gatewayMs: number;
  postgresMs: number;
  /** The Temporal server's CPU ms per request (0 when no pid was given). */
  temporalMs: number;
}

/** A load run and the CPU per request it cost. */
export type MeasuredRun = Run & { cpu: CpuPerRequest };

/**
 * One load run with the CPU per request it cost the given processes, PostgreSQL and (when its pid
 * is given) the Temporal server: a governed sync call should cost Temporal nothing.
 */
export async function loadWithCpu(pids: number[], o: LoadOptions, temporalPid?: number): Promise<MeasuredRun> {
  const cpuOf = () => pids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
  const temporalCpu = () => (temporalPid === undefined ? 0 : processCpuMs(temporalPid));
  const g0 = cpuOf();
  const pg0 = postgresCpuMs();
  const t0 = temporalCpu();
  const run = await load(o);
  const n = Math.max(1, run.total);
  return { ...run, cpu: { gatewayMs: pids.length ? (cpuOf() - g0) / n : 0, postgresMs: (postgresCpuMs() - pg0) / n, temporalMs: (temporalCpu() - t0) / n } };
}

/** A load started in the background: every response's end time and latency until `stop()`. */
export interface BackgroundLoad {
  /** Stops sending; resolves with each response as [end instant (performance.now()), latency ms], in arrival order. */
  stop(): Promise<{ responses: [number, number][]; statusCodes: Record<string, number>; errors: number }>;
}

/** Starts `o` (its `seconds` an upper bound) and runs it until `stop()`: for measuring calls while something else happens. */
export function backgroundLoad(o: LoadOptions): BackgroundLoad {
  const responses: [number, number][] = [];
  const instance = autocannon({
    url: o.url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...o.headers },
    body: JSON.stringify(o.body),
    connections: o.connections,
    duration: o.seconds,
    timeout: o.timeoutSeconds ?? 10,
  });
  instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => responses.push([performance.now(), ms]));
  const done = Promise.resolve(instance);
  return {
    stop: async () => {
      instance.stop();
      const r = await done;
      const statusCodes: Record<string, number> = {};
      for (const [code, v] of Object.entries((r.statusCodeStats ?? {}) as Record<string, { count: number }>)) statusCodes[code] = v.count;
      return { responses, statusCodes, errors: r.errors };
    },
  };
}
