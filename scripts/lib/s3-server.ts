/**
 * The S3-compatible server of the test runs (docs/decisions/archive-store.md): versitygw with its
 * POSIX backend, built once per machine with `go install` into ~/.cache/tollgate/versitygw-v<version>
 * (as the Temporal CLI is cached, scripts/lib/temporal-cli.ts) and started once per `jest` run on a
 * free loopback port, with a data directory and root credentials of its own.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { systemProbes } from './temporal-cli';
import { startListening } from './listening-process';
import { VERSITYGW_VERSION } from './versions';

export function versitygwCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'tollgate', `versitygw-v${VERSITYGW_VERSION}`);
}

/**
 * $VERSITYGW_PATH, else the cached build, else a build with Go into the cache (about a minute on
 * two cores with an empty Go module cache); without Go it throws a message saying what to install.
 */
export function ensureVersitygw(log: (msg: string) => void = console.log): string {
  const exe = process.platform === 'win32' ? 'versitygw.exe' : 'versitygw';
  if (process.env.VERSITYGW_PATH) {
    if (!fs.existsSync(process.env.VERSITYGW_PATH)) throw new Error(`VERSITYGW_PATH=${process.env.VERSITYGW_PATH} does not exist`);
    return process.env.VERSITYGW_PATH;
  }
  const dir = versitygwCacheDir();
  const cached = path.join(dir, exe);
  if (fs.existsSync(cached)) return cached;
  const go = systemProbes.findGo();
  if (!go) {
    throw new Error(
      `No versitygw (the tests' S3-compatible server) cached in ${dir} and Go is not installed to build it. Install Go ` +
        `(https://go.dev/dl/) and run again, or build it yourself (\`go install github.com/versity/versitygw/cmd/versitygw@v${VERSITYGW_VERSION}\`) ` +
        `and set VERSITYGW_PATH to the binary.`,
    );
  }
  log(`[tollgate] building versitygw v${VERSITYGW_VERSION} with Go into ${dir} (first run only, about a minute)…`);
  const started = Date.now();
  // Built into a directory of this process, then renamed into place: a concurrent run never sees half a binary.
  const staging = fs.mkdtempSync(`${dir}.build-`);
  try {
    execFileSync(go, ['install', `github.com/versity/versitygw/cmd/versitygw@v${VERSITYGW_VERSION}`], {
      stdio: 'inherit',
      cwd: os.tmpdir(),
      env: { ...process.env, GOBIN: staging, GOFLAGS: '-mod=mod' },
    });
    fs.mkdirSync(dir, { recursive: true });
    fs.renameSync(path.join(staging, exe), cached);
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  log(`[tollgate] versitygw built in ${Math.round((Date.now() - started) / 1000)} s`);
  return cached;
}

export interface S3Server {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts versitygw on 127.0.0.1:`port` over `dataDir` (buckets are its directories). */
export async function startS3Server(opts: {
  bin: string;
  port: number;
  dataDir: string;
  accessKeyId: string;
  secretAccessKey: string;
  logFile?: NodeJS.WritableStream;
}): Promise<S3Server> {
  fs.mkdirSync(opts.dataDir, { recursive: true });
  const region = 'us-east-1';
  // Credentials in its environment, not its arguments: `ps` shows arguments to every user.
  const server = await startListening({
    name: 'versitygw',
    bin: opts.bin,
    args: ['--port', `127.0.0.1:${opts.port}`, '--region', region, '--quiet', 'posix', opts.dataDir],
    port: opts.port,
    env: { ...process.env, ROOT_ACCESS_KEY_ID: opts.accessKeyId, ROOT_SECRET_ACCESS_KEY: opts.secretAccessKey },
    logFile: opts.logFile,
    timeoutMs: 30_000,
    pollMs: 100,
  });
  return {
    endpoint: `http://127.0.0.1:${opts.port}`,
    region,
    accessKeyId: opts.accessKeyId,
    secretAccessKey: opts.secretAccessKey,
    process: server.process,
    stop: server.stop,
  };
}
