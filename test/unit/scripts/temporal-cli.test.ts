import path from 'node:path';
import {
  acceptableVersion,
  CliProbes,
  downloadUrls,
  noCliMessage,
  selectTemporalCli,
  temporalCacheDir,
} from '../../../scripts/lib/temporal-cli';

const env = { XDG_CACHE_HOME: '/cache' } as NodeJS.ProcessEnv;
const cached = path.join(temporalCacheDir(env), 'temporal');

function probes(over: Partial<CliProbes> & { files?: string[] } = {}): CliProbes & { calls: string[] } {
  const files = new Set(over.files ?? []);
  const calls: string[] = [];
  return {
    calls,
    env,
    platform: 'linux',
    arch: 'x64',
    exists: (p) => files.has(p),
    which: () => null,
    version: () => null,
    download: async () => {
      calls.push('download');
      throw new Error('fetch failed');
    },
    findGo: () => null,
    goInstall: () => {
      calls.push('go');
      files.add(cached);
    },
    ...over,
  };
}

describe('Temporal CLI selection', () => {
  it('TEMPORAL_CLI_PATH wins over everything, and must exist', async () => {
    const p = probes({ env: { ...env, TEMPORAL_CLI_PATH: '/opt/t' }, files: ['/opt/t', cached] });
    await expect(selectTemporalCli(p, () => {})).resolves.toEqual({ path: '/opt/t', source: 'env' });
    await expect(selectTemporalCli(probes({ env: { ...env, TEMPORAL_CLI_PATH: '/nope' } }), () => {})).rejects.toThrow(
      'TEMPORAL_CLI_PATH=/nope does not exist',
    );
  });

  it('the cached binary comes before PATH and never touches the network', async () => {
    const p = probes({ files: [cached], which: () => '/usr/bin/temporal', version: () => 'temporal version 1.5.1 (Server 1.29.1)' });
    await expect(selectTemporalCli(p, () => {})).resolves.toEqual({ path: cached, source: 'cache' });
    expect(p.calls).toEqual([]);
  });

  it('a temporal on PATH is used when it is 1.5 or later, skipped (with a reason) otherwise', async () => {
    const ok = probes({ which: () => '/usr/bin/temporal', version: () => 'temporal version 1.6.0 (Server 1.30.0, UI 2.44.0)' });
    await expect(selectTemporalCli(ok, () => {})).resolves.toEqual({ path: '/usr/bin/temporal', source: 'path' });
    const logs: string[] = [];
    const old = probes({ which: () => '/usr/bin/temporal', version: () => 'temporal version 0.13.2 (Server 1.24.0)', findGo: () => '/go' });
    await expect(selectTemporalCli(old, (m) => logs.push(m))).resolves.toEqual({ path: cached, source: 'go' });
    expect(logs[0]).toMatch(/ignoring \/usr\/bin\/temporal \(temporal version 0\.13\.2.*needs Temporal CLI 1\.5 or later/);
    expect(old.calls).toEqual(['download', 'go']);
  });

  it('downloads into the cache before trying Go', async () => {
    const files = new Set<string>();
    const p = probes({
      exists: (f) => files.has(f),
      download: async (dir) => {
        files.add(path.join(dir, 'temporal'));
      },
      findGo: () => {
        throw new Error('Go must not be consulted');
      },
    });
    await expect(selectTemporalCli(p, () => {})).resolves.toEqual({ path: cached, source: 'download' });
  });

  it('falls back to go install when the download fails, saying why', async () => {
    const logs: string[] = [];
    const p = probes({ findGo: () => '/usr/local/go/bin/go' });
    await expect(selectTemporalCli(p, (m) => logs.push(m))).resolves.toEqual({ path: cached, source: 'go' });
    expect(p.calls).toEqual(['download', 'go']);
    expect(logs[0]).toContain('could not download the Temporal CLI release (fetch failed)');
  });

  it('TOLLGATE_TEMPORAL_NO_DOWNLOAD=1 skips the download', async () => {
    const p = probes({ env: { ...env, TOLLGATE_TEMPORAL_NO_DOWNLOAD: '1' }, findGo: () => '/go' });
    await expect(selectTemporalCli(p, () => {})).resolves.toEqual({ path: cached, source: 'go' });
    expect(p.calls).toEqual(['go']);
  });

  it('without download and without Go it says exactly what to do', async () => {
    const p = probes();
    await expect(selectTemporalCli(p, () => {})).rejects.toThrow(noCliMessage());
    const msg = noCliMessage();
    expect(msg).toContain('TEMPORAL_CLI_PATH');
    expect(msg).toContain('https://go.dev/dl/');
    expect(msg).toContain('temporal server start-dev');
    expect(msg).toContain('https://github.com/temporalio/cli/releases/tag/v1.5.1');
  });

  it('version rule and release URLs', () => {
    expect(acceptableVersion('temporal version 1.5.1 (Server 1.29.1, UI 2.41.0)')).toBe(true);
    expect(acceptableVersion('temporal version 1.4.0 (Server 1.28.0)')).toBe(false);
    expect(acceptableVersion('temporal version 2.0.0')).toBe(false);
    expect(acceptableVersion('temporal version 0.0.0-DEV (Server 1.29.1)')).toBe(false);
    expect(downloadUrls('darwin', 'arm64')).toEqual({
      archive: 'https://temporal.download/cli/archive/v1.5.1?platform=darwin&arch=arm64',
      checksums: 'https://github.com/temporalio/cli/releases/download/v1.5.1/checksums.txt',
    });
    expect(downloadUrls('linux', 'ia32')).toBeNull();
  });
});
