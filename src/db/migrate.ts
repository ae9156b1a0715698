import path from 'node:path';
import { applyFunctions, FUNCTIONS_DIR } from './apply-functions';

export const MIGRATIONS_DIR = path.join(__dirname, 'migrations');

export interface MigrateOptions {
  /** Where the function files are read from (tests point it at a copy). */
  functionsDir?: string;
}

/**
 * Applies pending SQL migrations, then the function files whose text changed (apply-functions.ts).
 * node-pg-migrate takes a PostgreSQL advisory lock for the run, so two processes starting at once
 * apply each migration exactly once; the functions step takes its own. Returns the names of the
 * migrations applied, then `functions/<name>` for each function file applied.
 */
export async function migrate(
  databaseUrl: string,
  log: (msg: string) => void = () => undefined,
  options: MigrateOptions = {},
): Promise<string[]> {
  // Loaded here, not at the top: a server process that does not migrate should not hold the runner.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { runner } = require('node-pg-migrate') as typeof import('node-pg-migrate');
  const applied = await runner({
    databaseUrl,
    dir: MIGRATIONS_DIR,
    direction: 'up',
    migrationsTable: 'pgmigrations',
    count: Infinity,
    // Features land in parallel with migrations in reserved number ranges; order is checked per file name only.
    checkOrder: false,
    log,
    logger: { debug: () => undefined, info: log, warn: log, error: log },
  });
  // After the numbered migrations: a function file may use the tables and types they create.
  const functions = await applyFunctions(databaseUrl, options.functionsDir ?? FUNCTIONS_DIR, log);
  return [...applied.map((m) => m.name), ...functions.map((name) => `functions/${name}`)];
}
