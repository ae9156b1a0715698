/**
 * One in-process Tollgate (API + worker) on a throwaway database and a Temporal dev server of its
 * own, as the jest global setup starts them: for the benches that drive Tollgate's modules from the
 * bench's process (`bench:intents`, `bench:gateway --jobs`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ensureTemporalCli } from '../../scripts/lib/temporal-cli';
import { createDatabaseIfMissing, dropDatabase, ensurePostgres, withDatabase } from '../../scripts/lib/postgres';
import { freePort, startTemporalDevServer } from '../../scripts/lib/temporal-dev-server';
import { loadConfig, type Config } from '../../src/config';
import { migrate } from '../../src/db/migrate';
import { createLogger, type Logger } from '../../src/logger';
import { startTollgate } from '../../src/server';

export interface InProcessTollgate {
  tg: Awaited<ReturnType<typeof startTollgate>>;
  config: Config;
  logger: Logger;
  databaseUrl: string;
  /** Stops Tollgate and Temporal and drops the database. */
  close(): Promise<void>;
}

/** `env` adds to (and overrides) the settings every such bench uses; `name` names the task queue. */
export async function startInProcessTollgate(opts: { name: string; env?: NodeJS.ProcessEnv; log: (m: string) => void }): Promise<InProcessTollgate> {
  const dataDir = path.resolve(__dirname, '..', '..', '.data');
  fs.mkdirSync(dataDir, { recursive: true });
  const cli = await ensureTemporalCli(opts.log);
  const serverUrl = await ensurePostgres(dataDir, opts.log);
  const database = `tollgate_bench_${Date.now()}`;
  await createDatabaseIfMissing(serverUrl, database);
  const databaseUrl = withDatabase(serverUrl, database);
  await migrate(databaseUrl);
  const temporal = await startTemporalDevServer({ cli, port: await freePort(), logFile: fs.createWriteStream(path.join(dataDir, 'bench-temporal.log')) });
  const config = loadConfig({
    ...process.env,
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: `bench-${opts.name}-${Date.now()}`,
    ...opts.env,
  });
  const logger = createLogger('silent');
  const tg = await startTollgate({ config, logger, startMaintenance: false, temporalRetryMs: 10_000 });
  return {
    tg,
    config,
    logger,
    databaseUrl,
    close: async () => {
      await tg.close();
      await temporal.stop();
      await dropDatabase(serverUrl, database).catch(() => undefined);
    },
  };
}
