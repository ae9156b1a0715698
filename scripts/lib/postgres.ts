import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';

async function reachable(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export function findPgBin(name: string): string | null {
  const which = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim()) return which.stdout.trim();
  const base = '/usr/lib/postgresql';
  if (!fs.existsSync(base)) return null;
  const versions = fs.readdirSync(base).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const candidate = path.join(base, v, 'bin', name);
    if (fs.existsSync(candidate)) return candidate;
  }
  return null;
}

/**
 * Returns a URL of a reachable PostgreSQL server (its maintenance database):
 * $DATABASE_URL if reachable; else the local server on 127.0.0.1:5432; else a private cluster
 * under `<dataDir>/pg`, initialised and started with the machine's initdb/pg_ctl.
 */
export async function ensurePostgres(dataDir: string, log: (msg: string) => void = console.log): Promise<string> {
  if (process.env.DATABASE_URL) {
    if (await reachable(process.env.DATABASE_URL)) return process.env.DATABASE_URL;
    log(`[tollgate] DATABASE_URL is set but not reachable; trying the local server`);
  }
  for (const url of ['postgres://postgres@127.0.0.1:5432/postgres', `postgres://${process.env.USER ?? 'postgres'}@127.0.0.1:5432/postgres`]) {
    if (await reachable(url)) return url;
  }
  const initdb = findPgBin('initdb');
  const pgCtl = findPgBin('pg_ctl');
  if (!initdb || !pgCtl) {
    throw new Error(
      'PostgreSQL is not reachable. Set DATABASE_URL to a server you can use, start a local server on ' +
        '127.0.0.1:5432, or install PostgreSQL (initdb and pg_ctl) so Tollgate can run a private cluster under .data/pg.',
    );
  }
  const cluster = path.resolve(dataDir, 'pg');
  const port = Number(process.env.TOLLGATE_PG_PORT ?? 54329);
  const asUser = process.getuid && process.getuid() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
  const run = (cmd: string, args: string[]) =>
    asUser.length ? execFileSync(asUser[0], [...asUser.slice(1), cmd, ...args], { stdio: 'inherit' }) : execFileSync(cmd, args, { stdio: 'inherit' });
  if (!fs.existsSync(path.join(cluster, 'PG_VERSION'))) {
    log(`[tollgate] initialising a private PostgreSQL cluster in ${cluster}`);
    fs.mkdirSync(cluster, { recursive: true });
    if (asUser.length) execFileSync('chown', ['-R', 'postgres', cluster]);
    run(initdb, ['-D', cluster, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  }
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  if (!(await reachable(url))) {
    log(`[tollgate] starting the private PostgreSQL cluster on port ${port}`);
    run(pgCtl, ['-D', cluster, '-l', path.join(cluster, 'server.log'), '-o', `-p ${port} -k /tmp -c listen_addresses=127.0.0.1`, '-w', 'start']);
  }
  if (!(await reachable(url))) throw new Error(`the private PostgreSQL cluster did not come up; see ${cluster}/server.log`);
  return url;
}

/** URL of `database` on the same server as `serverUrl`. */
export function withDatabase(serverUrl: string, database: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function createDatabaseIfMissing(serverUrl: string, database: string): Promise<void> {
  const client = new Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) await client.query(`CREATE DATABASE "${database.replace(/"/g, '')}"`);
  } finally {
    await client.end();
  }
}

export async function dropDatabase(serverUrl: string, database: string): Promise<void> {
  const client = new Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${database.replace(/"/g, '')}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
