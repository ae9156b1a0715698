/**
 * HTTP hardening limits (docs/decisions/http-hardening.md): slow-client timeouts of the Node
 * server, the body limit of routes that take no model input, and the failed-authentication
 * budget per source address. Read from the environment here (not src/config.ts) so the server and
 * the app take them with one call each.
 */
import http from 'node:http';
import { z } from 'zod';

const ms = z.coerce.number().int().min(100);
/** The HTTP limits' settings (docs/configuration.md lists them with src/config.ts's). */
export const httpLimitsEnvSchema = z.object({
  /** A client must send its complete request headers within this time (slowloris). */
  HTTP_HEADERS_TIMEOUT_MS: ms.max(120_000).default(10_000),
  /** ...and its complete request, body included, within this time (slow uploads); responses (streams) are not limited. */
  HTTP_REQUEST_TIMEOUT_MS: ms.max(3_600_000).default(60_000),
  /** How often Node checks the two timeouts above. */
  HTTP_TIMEOUT_CHECK_INTERVAL_MS: ms.max(30_000).default(1_000),
  /** JSON body limit of routes that take no model input (permits, policies, webhooks, management...). */
  CONTROL_BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  /** Failed authentications a source address may make in a burst, and how many it regains per second. */
  AUTH_FAILURE_BURST: z.coerce.number().int().min(1).max(100_000).default(50),
  AUTH_FAILURE_REFILL_PER_SECOND: z.coerce.number().min(0.001).max(10_000).default(1),
});

export interface HttpLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  timeoutCheckIntervalMs: number;
  controlBodyLimitBytes: number;
  authFailures: { burst: number; refillPerSecond: number };
}

export function httpLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): HttpLimits {
  const e = httpLimitsEnvSchema.parse(env);
  return {
    headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
    // Node requires headersTimeout <= requestTimeout.
    requestTimeoutMs: Math.max(e.HTTP_REQUEST_TIMEOUT_MS, e.HTTP_HEADERS_TIMEOUT_MS),
    timeoutCheckIntervalMs: e.HTTP_TIMEOUT_CHECK_INTERVAL_MS,
    controlBodyLimitBytes: e.CONTROL_BODY_LIMIT_BYTES,
    authFailures: { burst: e.AUTH_FAILURE_BURST, refillPerSecond: e.AUTH_FAILURE_REFILL_PER_SECOND },
  };
}

/** Options of http.createServer: a client that trickles its headers or body is disconnected. */
export function httpServerOptions(limits: HttpLimits = httpLimitsFromEnv()): http.ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: limits.timeoutCheckIntervalMs,
  };
}

/**
 * Errors Node's HTTP parser answers before Koa sees the request (a URL or headers over
 * maxHeaderSize: 431; a malformed request: 400; a header timeout: 408) are written in the API's
 * error shape instead of Node's bodiless default, then the connection is closed.
 */
export function answerClientErrors(server: http.Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable || (socket as { _httpMessage?: unknown })._httpMessage) {
      socket.destroy();
      return;
    }
    const [status, code, message] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'request_header_too_large', 'The request line or headers exceed the size limit']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'request_timeout', 'The request was not received in time']
          : [400, 'malformed_request', 'The HTTP request could not be parsed'];
    const body = JSON.stringify({ error: { code, message, details: {} } });
    const reason = http.STATUS_CODES[status] ?? 'Error';
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
