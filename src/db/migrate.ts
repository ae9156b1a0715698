import path from 'node:path';

export const MIGRATIONS_DIR = path.join(__dirname, 'migrations');

/**
 * Applies pending SQL migrations. node-pg-migrate takes a PostgreSQL advisory lock for the run, so
 * two processes starting at once apply each migration exactly once.
 */
export async function migrate(databaseUrl: string, log: (msg: string) => void = () => undefined): Promise<string[]> {
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
  return applied.map((m) => m.name);
}
