/**
 * The processes the fault suite breaks: a throwaway PostgreSQL cluster it can crash and restart, and
 * a Tollgate API or worker process it can SIGKILL and start again.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { findPgBin } from './postgres';
import { SOURCE_NODE_ARGS } from './source-node-args';

const PG_USER = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];

function pgRun(cmd: string, args: string[]): void {
  const [bin, ...pre] = PG_USER.length ? [PG_USER[0], ...PG_USER.slice(1), cmd] : [cmd];
  const r = spawnSync(bin, [...pre, ...args], { stdio: 'pipe', encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
}

/** pgRun without blocking the event loop (the load goes on meanwhile). */
function pgRunAsync(cmd: string, args: string[]): Promise<void> {
  const [bin, ...pre] = PG_USER.length ? [PG_USER[0], ...PG_USER.slice(1), cmd] : [cmd];
  return new Promise((resolve, reject) => {
    const child = spawn(bin, [...pre, ...args], { stdio: 'ignore' });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}`))));
  });
}

/** A throwaway PostgreSQL cluster under `dir`, on `port`, restartable like a crash. */
export async function privatePostgres(dir: string, port: number) {
  const initdb = findPgBin('initdb');
  const pgCtl = findPgBin('pg_ctl');
  if (!initdb || !pgCtl) throw new Error('the chaos suite needs initdb and pg_ctl (Debian: postgresql)');
  fs.mkdirSync(dir, { recursive: true });
  if (PG_USER.length) spawnSync('chown', ['-R', 'postgres', dir]);
  pgRun(initdb, ['-D', dir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  const opts = ['-D', dir, '-l', path.join(dir, 'server.log'), '-o', `-p ${port} -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=200`, '-w'];
  pgRun(pgCtl, [...opts, 'start']);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    crash: () => pgRunAsync(pgCtl, ['-D', dir, '-m', 'immediate', '-w', 'stop']),
    start: () => pgRunAsync(pgCtl, [...opts, 'start']),
    stop: () => pgRun(pgCtl, ['-D', dir, '-m', 'fast', '-w', 'stop']),
  };
}

export class TollgateProcess {
  child: ChildProcess | null = null;
  constructor(
    private readonly role: 'api' | 'worker',
    private readonly env: NodeJS.ProcessEnv,
    private readonly logFile: string,
  ) {}

  /** Starts and resolves once the process logged that it started. */
  async start(): Promise<void> {
    const out = fs.createWriteStream(this.logFile, { flags: 'a' });
    // As `npm run dev` runs it; in a process group of its own, which kill() signals as a whole.
    const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, 'src/main.ts', '--role', this.role], { cwd: path.resolve(__dirname, '..', '..'), env: this.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      let seen = '';
      const timer = setTimeout(() => reject(new Error(`${this.role} did not start within 120 s; see ${this.logFile}`)), 120_000);
      const onData = (chunk: Buffer) => {
        out.write(chunk);
        seen = (seen + chunk.toString()).slice(-4000);
        if (seen.includes('tollgate started')) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', (c: Buffer) => out.write(c));
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${this.role} exited with ${code} while starting; see ${this.logFile}`));
      });
    }).finally(() => child.removeAllListeners('exit'));
    child.once('exit', () => out.end());
  }

  kill(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      child.once('exit', () => resolve());
      process.kill(-child.pid!, signal);
    });
  }
}
