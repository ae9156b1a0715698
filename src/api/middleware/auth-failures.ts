import { Middleware, ParameterizedContext } from 'koa';
import { ApiError } from '../errors';
import { nativeErrorBody } from '../../proxy/native-errors';
import { PROVIDER_IDS, type ProviderId } from '../../config';

/** Source addresses tracked at most; the least recently failing are forgotten first. */
const MAX_TRACKED = 100_000;

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Failed authentications per source address, as a token bucket per process
 * (docs/decisions/http-hardening.md): every 401 answer takes a token; an address without tokens
 * is answered 429 before its key is even looked up, whatever key it sends, until the bucket
 * refills.
 */
export function createAuthFailureLimiter(opts: { burst: number; refillPerSecond: number; now?: () => number }) {
  const now = opts.now ?? Date.now;
  const buckets = new Map<string, Bucket>();
  const level = (source: string): Bucket | undefined => {
    const b = buckets.get(source);
    if (!b) return undefined;
    const t = now();
    b.tokens = Math.min(opts.burst, b.tokens + ((t - b.at) / 1000) * opts.refillPerSecond);
    b.at = t;
    if (b.tokens >= opts.burst) {
      buckets.delete(source);
      return undefined;
    }
    return b;
  };
  return {
    /** Seconds until the address may try again, or 0 when it may now. */
    retryAfterSeconds(source: string): number {
      const b = level(source);
      return b && b.tokens < 1 ? Math.ceil((1 - b.tokens) / opts.refillPerSecond) : 0;
    },
    recordFailure(source: string): void {
      const b = level(source) ?? { tokens: opts.burst, at: now() };
      b.tokens -= 1;
      buckets.delete(source); // re-insert: Map order is the eviction order
      buckets.set(source, b);
      if (buckets.size > MAX_TRACKED) buckets.delete(buckets.keys().next().value!);
    },
    tracked: () => buckets.size,
  };
}

export type AuthFailureLimiter = ReturnType<typeof createAuthFailureLimiter>;

/**
 * The address a request came from: the socket's peer, or behind a proxy (`app.proxy`) the last
 * X-Forwarded-For entry, the one the nearest proxy appended (earlier entries are the client's to forge).
 */
export function sourceAddress(ctx: ParameterizedContext): string {
  const ips = ctx.request.ips;
  return (ips.length ? ips[ips.length - 1] : ctx.request.socket.remoteAddress) ?? 'unknown';
}

/** Outside the error handler: it sees every answer's final status, 401s included. */
export function limitFailedAuthentication(limiter: AuthFailureLimiter): Middleware {
  return async (ctx, next) => {
    const source = sourceAddress(ctx);
    const retryAfter = limiter.retryAfterSeconds(source);
    if (retryAfter > 0) {
      const message = 'Too many failed authentications from this address; retry later';
      ctx.status = 429;
      ctx.set('retry-after', String(retryAfter));
      const provider = /^\/v1\/proxy\/([a-z]+)\//.exec(ctx.path)?.[1] as ProviderId | undefined;
      ctx.body = provider && PROVIDER_IDS.includes(provider)
        ? nativeErrorBody(provider, { status: 429, code: 'too_many_failed_authentications', message })
        : new ApiError(429, 'too_many_failed_authentications', message, { details: { retry_after_seconds: retryAfter } }).toBody();
      return;
    }
    await next();
    if (ctx.status === 401) limiter.recordFailure(source);
  };
}
