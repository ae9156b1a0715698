import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TEMPORAL_CLI_VERSION } from './versions';

export function temporalCacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'tollgate', `temporal-v${TEMPORAL_CLI_VERSION}`);
}

function onPath(cmd: string): string | null {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : null;
}

/**
 * Finds the Temporal CLI: $TEMPORAL_CLI, else `temporal` on PATH, else the cached build, else
 * builds it with `go install` into the cache directory (outside the repository, so every clone
 * reuses it).
 */
export function ensureTemporalCli(log: (msg: string) => void = console.log): string {
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv) {
    if (!fs.existsSync(fromEnv)) throw new Error(`TEMPORAL_CLI=${fromEnv} does not exist`);
    return fromEnv;
  }
  const cached = path.join(temporalCacheDir(), 'temporal');
  if (fs.existsSync(cached)) return cached;
  const system = onPath('temporal');
  if (system) return system;
  const go = onPath('go') ?? (fs.existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : null);
  if (!go) {
    throw new Error(
      'No Temporal CLI found and Go is not installed to build it. Install Go (https://go.dev/dl/), ' +
        `or install the Temporal CLI v${TEMPORAL_CLI_VERSION} and set TEMPORAL_CLI to its path.`,
    );
  }
  log(`[tollgate] building Temporal CLI v${TEMPORAL_CLI_VERSION} into ${temporalCacheDir()} (first run only, a few minutes)…`);
  fs.mkdirSync(temporalCacheDir(), { recursive: true });
  execFileSync(go, ['install', `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`], {
    stdio: 'inherit',
    cwd: os.tmpdir(),
    env: { ...process.env, GOBIN: temporalCacheDir(), GOFLAGS: '-mod=mod' },
  });
  if (!fs.existsSync(cached)) throw new Error(`go install finished but ${cached} is missing`);
  return cached;
}
