import { Runtime, DefaultLogger, LogLevel } from '@temporalio/worker';
import type { Logger } from '../logger';

let installed = false;

const LEVELS: Record<string, LogLevel> = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO',
  warn: 'WARN',
  error: 'ERROR',
  fatal: 'ERROR',
};

/**
 * Routes the Temporal SDK's own logs into pino, at warn or above unless debugging. The runtime is
 * process-wide and can be installed once; later calls are no-ops.
 */
export function installTemporalRuntime(logger: Logger): void {
  if (installed) return;
  installed = true;
  const level = logger.level === 'silent' ? 'ERROR' : logger.level === 'debug' || logger.level === 'trace' ? LEVELS[logger.level] : 'WARN';
  try {
    Runtime.install({
      logger: new DefaultLogger(level, (entry) => {
        const fields = { component: 'temporal-sdk', ...(entry.meta ?? {}) };
        if (entry.level === 'ERROR') logger.error(fields, entry.message);
        else if (entry.level === 'WARN') logger.warn(fields, entry.message);
        else logger.debug(fields, entry.message);
      }),
    });
  } catch {
    // Already instantiated by an earlier connection in this process: keep that runtime.
  }
}
