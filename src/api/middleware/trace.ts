import type { Middleware } from 'koa';
import { context, SpanStatusCode } from '@opentelemetry/api';
import { startServerSpan } from '../../telemetry/tracing';

/**
 * One server span per request (src/telemetry/tracing.ts), named by route template once routing
 * has matched; its trace id goes to ctx.state.traceId for the access log line. A no-op span while
 * tracing is off.
 */
export function traceRequests(): Middleware {
  return async (ctx, next) => {
    const { span, ctx: spanCtx } = startServerSpan(`${ctx.method} ${ctx.path}`, ctx.headers, { 'http.request.method': ctx.method, 'url.path': ctx.path });
    if (span.isRecording()) ctx.state.traceId = span.spanContext().traceId;
    try {
      await context.with(spanCtx, next);
    } finally {
      const route = (ctx.state.routePath as string | undefined) ?? (ctx as unknown as { _matchedRoute?: string })._matchedRoute;
      if (route) span.updateName(`${ctx.method} ${String(route)}`);
      span.setAttribute('http.response.status_code', ctx.status);
      if (route) span.setAttribute('http.route', String(route));
      if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
  };
}
