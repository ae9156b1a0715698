import path from 'node:path';
import { runner } from 'node-pg-migrate';

export const MIGRATIONS_DIR = path.join(__dirname, 'migrations');

/**
 * Applies pending SQL migrations. node-pg-migrate takes a PostgreSQL advisory lock for the run, so
 * two processes starting at once apply each migration exactly once.
 */
export async function migrate(databaseUrl: string, log: (msg: string) => void = () => undefined): Promise<string[]> {
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
