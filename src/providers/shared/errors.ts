/** Status → failure classification shared by every provider; providers supply the message lookup. */
import type { ProviderFailure } from '../types';

type Headers = Record<string, string | string[] | undefined> | undefined;

function header(headers: Headers, name: string): string | undefined {
  if (!headers) return undefined;
  const v = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

/** Retry-After in whole seconds (delta-seconds or an HTTP date); undefined when absent/invalid. */
export function retryAfterSeconds(headers: Headers): number | undefined {
  const raw = header(headers, 'retry-after');
  if (!raw) return undefined;
  const n = Number(raw);
  if (Number.isFinite(n) && n >= 0) return Math.ceil(n);
  const date = Date.parse(raw);
  if (Number.isFinite(date)) return Math.max(0, Math.ceil((date - Date.now()) / 1000));
  return undefined;
}

/**
 * 429 → rate_limited (retryable, Retry-After kept); 529 and 503 → overloaded (retryable);
 * 408/504 → timeout (retryable); other 5xx → http_error (retryable); other 4xx → http_error (not).
 */
export function classifyHttpFailure(status: number, native: unknown, message: string, headers?: Headers): ProviderFailure {
  const base = { status, native, message: message || `provider returned HTTP ${status}` };
  if (status === 429) return { ...base, kind: 'rate_limited', retryable: true, retry_after_seconds: retryAfterSeconds(headers) };
  if (status === 529 || status === 503) return { ...base, kind: 'overloaded', retryable: true, retry_after_seconds: retryAfterSeconds(headers) };
  if (status === 408 || status === 504) return { ...base, kind: 'timeout', retryable: true };
  return { ...base, kind: 'http_error', retryable: status >= 500 };
}

/** Reads `path` (dot-separated) of an unknown JSON value as a string. */
export function stringAt(body: unknown, path: string): string | undefined {
  let cur: unknown = body;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return typeof cur === 'string' ? cur : undefined;
}
