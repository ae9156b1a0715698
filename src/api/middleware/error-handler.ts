import { Middleware } from 'koa';
import { ApiError } from '../errors';
import { Logger } from '../../logger';

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  type?: string;
  expose?: boolean;
  message?: string;
}

/** Maps body-parser failures to their own codes so callers can tell them apart. */
function fromBodyParser(err: HttpLikeError & { name?: string }): ApiError | null {
  // co-body reports malformed JSON as a SyntaxError carrying status 400 and no type.
  if (err.name === 'SyntaxError' && err.status === 400) {
    return new ApiError(400, 'invalid_json', 'The request body is not valid JSON');
  }
  switch (err.type) {
    case 'entity.parse.failed':
      return new ApiError(400, 'invalid_json', 'The request body is not valid JSON');
    case 'entity.too.large':
      return new ApiError(413, 'payload_too_large', 'The request body exceeds the size limit');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ApiError(415, 'unsupported_media_type', 'Unsupported request body encoding');
    case 'request.aborted':
      return new ApiError(400, 'request_aborted', 'The client aborted the request body');
    default:
      return null;
  }
}

/** PostgreSQL connection-class and shutdown SQLSTATEs (08xxx, 57P01-57P03). */
const DB_OUTAGE_CODES = new Set(['08000', '08001', '08003', '08004', '08006', '57P01', '57P02', '57P03']);
const DB_OUTAGE_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/**
 * A request that failed because PostgreSQL is unreachable or restarting: 503 with Retry-After, not
 * an internal error (found by `npm run chaos`, which restarts PostgreSQL under load). Whatever the
 * request had committed before is closed by reconciliation.
 */
function fromDatabaseOutage(err: Error & { code?: string }): ApiError | null {
  const outage = (err.code !== undefined && (DB_OUTAGE_CODES.has(err.code) || err.code === 'ECONNREFUSED' || err.code === 'ECONNRESET')) || DB_OUTAGE_MESSAGES.test(err.message ?? '');
  if (!outage) return null;
  return new ApiError(503, 'database_unavailable', 'The database is unavailable; retry shortly', { headers: { 'retry-after': '1' } });
}

/**
 * The error contract: every failure becomes `{"error": {"code", "message", "details"}}`.
 * Unexpected errors are logged with their stack and answered with a bare 500.
 */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new ApiError(404, 'route_not_found', `No route for ${ctx.method} ${ctx.path}`);
      }
    } catch (raw) {
      const err = raw as HttpLikeError & Error;
      let apiError: ApiError;
      if (raw instanceof ApiError) apiError = raw;
      else apiError = fromBodyParser(err) ?? fromDatabaseOutage(err) ?? new ApiError(500, 'internal_error', 'An internal error occurred; retry later');
      if (apiError.code === 'database_unavailable') {
        logger.warn({ err: raw, request_id: ctx.state.requestId }, 'database unavailable');
      } else if (apiError.status >= 500) {
        logger.error({ err: raw, request_id: ctx.state.requestId }, 'unhandled error');
      }
      ctx.status = apiError.status;
      for (const [k, v] of Object.entries(apiError.headers)) ctx.set(k, v);
      ctx.body = apiError.toBody();
    }
  };
}
