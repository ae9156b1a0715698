import { Middleware } from 'koa';
import { Histogram, Registry } from 'prom-client';
import { Logger } from '../../logger';
import type { AuthContext } from '../../auth-context';

export function createHttpMetrics(registry: Registry): Histogram<'method' | 'route' | 'status'> {
  return new Histogram({
    name: 'tollgate_http_request_duration_seconds',
    help: 'HTTP request latency by route template and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
}

/**
 * One structured log line and one histogram observation per request, labelled by route template,
 * once the response is over: its last byte handed to the socket, or the connection gone first
 * (`aborted`). Recorded when the middleware chain returned, a streamed body's time was left out
 * (its chain returns before the first chunk), and the line's synchronous write came before every
 * response went out.
 */
export function observe(logger: Logger, histogram: Histogram<'method' | 'route' | 'status'>): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    ctx.res.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = (ctx.state.routePath as string | undefined) ?? (ctx as unknown as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      histogram.observe({ method: ctx.method, route: String(route), status: String(ctx.status) }, seconds);
      logger.info(
        {
          request_id: ctx.state.requestId,
          method: ctx.method,
          route,
          status: ctx.status,
          duration_ms: Math.round(seconds * 1000),
          project_id: (ctx.state.auth as AuthContext | undefined)?.projectId,
          ...(ctx.state.traceId ? { trace_id: ctx.state.traceId as string } : {}),
          ...(ctx.res.writableFinished ? {} : { aborted: true }),
        },
        'request',
      );
    });
    await next();
  };
}
