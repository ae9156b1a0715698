import pino from 'pino';

/** Paths that may carry secrets; pino replaces them before a line is written. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["x-goog-api-key"]',
  'headers.authorization',
  'apiKey',
  'api_key',
  'key',
  '*.apiKey',
  '*.api_key',
  'secret',
  '*.secret',
];

export type Logger = pino.Logger;

/**
 * Logs to stdout, or to `destination` (the tests write files they scan for secrets). Stdout is
 * written asynchronously: lines that arrive while a write is in flight go out together in the next
 * one, instead of one blocking write per line (every request logs one). Pino flushes what is
 * pending when the process exits; a SIGKILL can lose the lines of the last write in flight.
 */
export function createLogger(level: string, base: Record<string, unknown> = {}, destination?: pino.DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'tollgate', ...base },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false }));
}
