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

/** Logs to stdout, or to `destination` (the tests write files they scan for secrets). */
export function createLogger(level: string, base: Record<string, unknown> = {}, destination?: pino.DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'tollgate', ...base },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(options, destination) : pino(options);
}
