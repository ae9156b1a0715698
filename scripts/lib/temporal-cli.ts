import { execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TEMPORAL_CLI_VERSION } from './versions';

export function temporalCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'tollgate', `temporal-v${TEMPORAL_CLI_VERSION}`);
}

/** Release archive names as the CLI's goreleaser config writes them (`temporal_cli_<v>_<os>_<arch>`). */
export function releaseAsset(platform: NodeJS.Platform, arch: string): { os: string; arch: string; archive: string } | null {
  const goos = platform === 'linux' ? 'linux' : platform === 'darwin' ? 'darwin' : platform === 'win32' ? 'windows' : null;
  const goarch = arch === 'x64' ? 'amd64' : arch === 'arm64' ? 'arm64' : null;
  if (!goos || !goarch) return null;
  // Windows has both .zip and .tar.gz; the .tar.gz is what the SDKs use and what `tar` unpacks everywhere.
  return { os: goos, arch: goarch, archive: `temporal_cli_${TEMPORAL_CLI_VERSION}_${goos}_${goarch}.tar.gz` };
}

export function downloadUrls(platform: NodeJS.Platform, arch: string): { archive: string; checksums: string } | null {
  const asset = releaseAsset(platform, arch);
  if (!asset) return null;
  return {
    archive: `https://temporal.download/cli/archive/v${TEMPORAL_CLI_VERSION}?platform=${asset.os}&arch=${asset.arch}`,
    checksums: `https://github.com/temporalio/cli/releases/download/v${TEMPORAL_CLI_VERSION}/checksums.txt`,
  };
}

/**
 * Which `temporal --version` outputs are accepted for a CLI found on PATH: 1.x with x ≥ 5. The
 * pinned 1.5.1 is what the suite runs on; later 1.x releases keep `server start-dev` and its flags
 * (`--search-attribute`, `--dynamic-config-value`, `--db-filename`) and bundle newer servers, which
 * the SDK supports. Releases before 1.5 bundle servers older than the one the suite is verified on,
 * and 0.x (pre-GA) had other flags, so they are skipped. Development builds (`0.0.0-DEV`, what
 * `go install` produces) are accepted only from the cache, where Tollgate built them itself.
 */
export function acceptableVersion(versionOutput: string): boolean {
  const m = /temporal version (\d+)\.(\d+)\.(\d+)/.exec(versionOutput);
  if (!m) return false;
  return Number(m[1]) === 1 && Number(m[2]) >= 5;
}

export function noCliMessage(): string {
  return (
    `No Temporal CLI found: none at $TEMPORAL_CLI_PATH, none cached in ${temporalCacheDir()}, no \`temporal\` ` +
    `1.5 or later on PATH, the release archive could not be downloaded, and Go is not installed to build it.\n` +
    `Do one of:\n` +
    `  1. install the Temporal CLI (https://docs.temporal.io/cli/setup-cli, e.g. \`brew install temporal\`) and put \`temporal\` on PATH;\n` +
    `  2. download temporal_cli_${TEMPORAL_CLI_VERSION}_<os>_<arch>.tar.gz from https://github.com/temporalio/cli/releases/tag/v${TEMPORAL_CLI_VERSION}, ` +
    `unpack it, and set TEMPORAL_CLI_PATH=/path/to/temporal;\n` +
    `  3. install Go (https://go.dev/dl/) and run again: Tollgate builds the CLI once into the cache;\n` +
    `  4. run \`temporal server start-dev --port 7233\` yourself (npm run dev uses a server already listening on 7233).`
  );
}

/** Everything the selection touches, injectable so the order can be tested without network or Go. */
export interface CliProbes {
  env: NodeJS.ProcessEnv;
  platform: NodeJS.Platform;
  arch: string;
  exists(p: string): boolean;
  /** Absolute path of a command on PATH, or null. */
  which(cmd: string): string | null;
  /** Output of `<bin> --version`, or null when it does not run. */
  version(bin: string): string | null;
  /** Downloads and verifies the release archive and unpacks `temporal` into `dir`; throws on failure. */
  download(dir: string, log: (msg: string) => void): Promise<void>;
  /** Builds the CLI with `go install` into `dir`. */
  goInstall(go: string, dir: string): void;
  /** Where Go is, if anywhere. */
  findGo(): string | null;
}

export type CliSource = 'env' | 'cache' | 'path' | 'download' | 'go';

export async function selectTemporalCli(
  probes: CliProbes,
  log: (msg: string) => void,
): Promise<{ path: string; source: CliSource }> {
  const exe = probes.platform === 'win32' ? 'temporal.exe' : 'temporal';
  const fromEnv = probes.env.TEMPORAL_CLI_PATH || probes.env.TEMPORAL_CLI;
  if (fromEnv) {
    if (!probes.exists(fromEnv)) throw new Error(`TEMPORAL_CLI_PATH=${fromEnv} does not exist`);
    return { path: fromEnv, source: 'env' };
  }
  const dir = temporalCacheDir(probes.env);
  const cached = path.join(dir, exe);
  if (probes.exists(cached)) return { path: cached, source: 'cache' };
  const system = probes.which('temporal');
  if (system) {
    const v = probes.version(system) ?? '';
    if (acceptableVersion(v)) return { path: system, source: 'path' };
    log(`[tollgate] ignoring ${system} (${v.trim() || 'no --version output'}): Tollgate needs Temporal CLI 1.5 or later`);
  }
  if (probes.env.TOLLGATE_TEMPORAL_NO_DOWNLOAD !== '1' && releaseAsset(probes.platform, probes.arch)) {
    try {
      await probes.download(dir, log);
      if (probes.exists(cached)) return { path: cached, source: 'download' };
      log(`[tollgate] the release archive did not contain ${exe}`);
    } catch (err) {
      log(`[tollgate] could not download the Temporal CLI release (${(err as Error).message}); trying Go`);
    }
  }
  const go = probes.findGo();
  if (!go) throw new Error(noCliMessage());
  log(`[tollgate] building Temporal CLI v${TEMPORAL_CLI_VERSION} with Go into ${dir} (first run only, a few minutes)…`);
  probes.goInstall(go, dir);
  if (!probes.exists(cached)) throw new Error(`go install finished but ${cached} is missing`);
  return { path: cached, source: 'go' };
}

function which(cmd: string): string | null {
  const r = spawnSync(process.platform === 'win32' ? 'where' : 'sh', process.platform === 'win32' ? [cmd] : ['-c', `command -v ${cmd}`], {
    encoding: 'utf8',
  });
  const first = r.stdout?.split(/\r?\n/)[0]?.trim();
  return r.status === 0 && first ? first : null;
}

async function fetchWithTimeout(url: string, ms: number): Promise<Response> {
  const res = await fetch(url, { signal: AbortSignal.timeout(ms), redirect: 'follow' });
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return res;
}

/**
 * Downloads the release archive from Temporal's CDN and checks it against the release's
 * checksums.txt (sha256, published with every release by goreleaser). The checksums file is
 * fetched first with a short timeout, so a machine without internet falls through in seconds.
 */
export async function downloadRelease(dir: string, log: (msg: string) => void, platform = process.platform, arch = process.arch): Promise<void> {
  const urls = downloadUrls(platform, arch);
  const asset = releaseAsset(platform, arch);
  if (!urls || !asset) throw new Error(`no release archive for ${platform}/${arch}`);
  const connectMs = Number(process.env.TOLLGATE_TEMPORAL_DOWNLOAD_TIMEOUT_MS || 4000);
  const sums = await (await fetchWithTimeout(urls.checksums, connectMs)).text();
  const line = sums.split('\n').find((l) => l.trim().endsWith(` ${asset.archive}`) || l.trim().endsWith(`*${asset.archive}`));
  const expected = line?.trim().split(/\s+/)[0];
  if (!expected || !/^[0-9a-f]{64}$/.test(expected)) throw new Error(`checksums.txt has no entry for ${asset.archive}`);
  log(`[tollgate] downloading Temporal CLI v${TEMPORAL_CLI_VERSION} (${asset.archive}) into ${dir}…`);
  const body = Buffer.from(await (await fetchWithTimeout(urls.archive, 180_000)).arrayBuffer());
  const actual = crypto.createHash('sha256').update(body).digest('hex');
  if (actual !== expected) throw new Error(`sha256 mismatch for ${asset.archive}: expected ${expected}, got ${actual}`);
  fs.mkdirSync(dir, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-temporal-'));
  try {
    const archivePath = path.join(tmp, asset.archive);
    fs.writeFileSync(archivePath, body);
    execFileSync('tar', ['-xzf', archivePath, '-C', tmp], { stdio: 'pipe' });
    const exe = platform === 'win32' ? 'temporal.exe' : 'temporal';
    const unpacked = path.join(tmp, exe);
    if (!fs.existsSync(unpacked)) throw new Error(`${asset.archive} has no ${exe}`);
    fs.chmodSync(unpacked, 0o755);
    // Copy then rename, so a concurrent start never sees a half-written binary.
    const staged = path.join(dir, `${exe}.${process.pid}.tmp`);
    fs.copyFileSync(unpacked, staged);
    fs.renameSync(staged, path.join(dir, exe));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

export const systemProbes: CliProbes = {
  env: process.env,
  platform: process.platform,
  arch: process.arch,
  exists: (p) => fs.existsSync(p),
  which,
  version: (bin) => {
    const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 10_000 });
    return r.status === 0 ? r.stdout : null;
  },
  download: (dir, log) => downloadRelease(dir, log),
  findGo: () => which('go') ?? (fs.existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : null),
  goInstall: (go, dir) => {
    fs.mkdirSync(dir, { recursive: true });
    execFileSync(go, ['install', `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`], {
      stdio: 'inherit',
      cwd: os.tmpdir(),
      env: { ...process.env, GOBIN: dir, GOFLAGS: '-mod=mod' },
    });
  },
};

/**
 * Finds the Temporal CLI: $TEMPORAL_CLI_PATH (or the older $TEMPORAL_CLI), else the cached copy in
 * ~/.cache/tollgate/temporal-v<version>/, else `temporal` 1.5+ on PATH, else downloads the release
 * archive (checksum-verified) into the cache, else builds it there with `go install`; with none of
 * these possible it throws a message saying what to install (docs/decisions/temporal-cli-provisioning.md).
 */
export async function ensureTemporalCli(log: (msg: string) => void = console.log): Promise<string> {
  const found = await selectTemporalCli(systemProbes, log);
  if (found.source === 'path' || found.source === 'download') log(`[tollgate] Temporal CLI: ${found.path} (${found.source})`);
  return found.path;
}
