import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config';
import { migrate } from './db/migrate';
import { tuneHeap } from './runtime/heap';
import { startTollgate } from './server';
import { startTracing } from './telemetry/tracing';

/** `tollgate [--role api|worker|all] [--migrate]` */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { role: { type: 'string' }, migrate: { type: 'boolean', default: false } },
  });
  const env = { ...process.env };
  if (values.role) env.TOLLGATE_ROLE = values.role;
  const config = loadConfig(env);
  tuneHeap(config.heapGrowingPercent);
  if (values.migrate) await migrate(config.databaseUrl);
  const tracing = startTracing(env);
  const tollgate = await startTollgate({ config, temporalRetryMs: 60_000 });
  tollgate.logger.info(
    { role: config.role, url: tollgate.url, temporal: config.temporal.address, task_queue: config.temporal.taskQueue },
    'tollgate started',
  );
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    tollgate.logger.info({ signal }, 'shutting down');
    tollgate
      .close()
      .then(() => tracing?.shutdown())
      .then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err) => {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(2);
  }
  console.error('tollgate failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
