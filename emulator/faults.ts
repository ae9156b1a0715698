/**
 * Fault controls, per request: `x-emulator-<name>` headers, or a marker anywhere in the prompt
 * text `[[emulator:name=value,name=value]]` (so faults can be triggered through Tollgate, which
 * does not forward arbitrary headers). Headers win over markers. See README.md.
 */
import type { IncomingHttpHeaders } from 'node:http';

export interface Faults {
  status?: number;
  retryAfter?: number;
  latencyMs: number;
  ttftMs: number;
  chunkDelayMs: number;
  streamBreakAfter?: number;
  malformed: boolean;
  omitUsage: boolean;
  cachedTokens: number;
  /** Answer with as much output as allowed: exactly the request's output ceiling (FILL_DEFAULT_TOKENS without one). */
  fillOutput: boolean;
}

const MARKER = /\[\[emulator:([^\]]*)\]\]/g;
const NAMES = ['status', 'retry_after', 'latency_ms', 'ttft_ms', 'chunk_delay_ms', 'stream_break_after', 'malformed', 'omit_usage', 'cached_tokens', 'fill_output'] as const;

export function parseFaults(headers: IncomingHttpHeaders, texts: string[]): Faults {
  const raw: Record<string, string> = {};
  for (const text of texts) {
    for (const m of text.matchAll(MARKER)) {
      for (const pair of m[1].split(/[,;\s]+/)) {
        const [k, v = '1'] = pair.split('=');
        if (k) raw[k.trim().toLowerCase().replace(/-/g, '_')] = v.trim();
      }
    }
  }
  for (const name of NAMES) {
    const h = headers[`x-emulator-${name.replace(/_/g, '-')}`];
    if (h !== undefined) raw[name] = String(Array.isArray(h) ? h[0] : h);
  }
  const int = (k: string) => (raw[k] !== undefined && Number.isFinite(Number(raw[k])) ? Math.max(0, Math.floor(Number(raw[k]))) : undefined);
  const flag = (k: string) => raw[k] !== undefined && raw[k] !== '0' && raw[k] !== 'false';
  return {
    status: int('status') || undefined,
    retryAfter: int('retry_after'),
    latencyMs: int('latency_ms') ?? 0,
    ttftMs: int('ttft_ms') ?? 0,
    chunkDelayMs: int('chunk_delay_ms') ?? 0,
    streamBreakAfter: int('stream_break_after'),
    malformed: flag('malformed'),
    omitUsage: flag('omit_usage'),
    cachedTokens: int('cached_tokens') ?? 0,
    fillOutput: flag('fill_output'),
  };
}

