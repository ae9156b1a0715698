import fs from 'node:fs';
import path from 'node:path';
import { CollectorProbes, noCollectorMessage, OTELCOL_SOURCE_DIR, otelCollectorCacheDir, selectOtelCollector } from '../../../scripts/lib/otel-collector';
import { OTEL_COLLECTOR_VERSION } from '../../../scripts/lib/versions';

const env = { XDG_CACHE_HOME: '/cache' } as NodeJS.ProcessEnv;
const cached = path.join(otelCollectorCacheDir(env), 'otelcol');

function probes(over: Partial<CollectorProbes> & { files?: string[] } = {}): CollectorProbes & { builds: string[] } {
  const files = new Set(over.files ?? []);
  const builds: string[] = [];
  return {
    builds,
    env,
    exists: (p) => files.has(p),
    findGo: () => null,
    build: (_go, out) => {
      builds.push(out);
      files.add(out);
    },
    ...over,
  };
}

describe('OpenTelemetry Collector (test OTLP receiver) selection', () => {
  it('is cached per release under ~/.cache/tollgate', () => {
    expect(cached).toBe(`/cache/tollgate/otelcol-v${OTEL_COLLECTOR_VERSION}/otelcol`);
  });

  it('OTELCOL_PATH wins, and must exist', () => {
    expect(selectOtelCollector(probes({ env: { ...env, OTELCOL_PATH: '/opt/otelcol' }, files: ['/opt/otelcol', cached] }), () => {})).toEqual({
      path: '/opt/otelcol',
      source: 'env',
    });
    expect(() => selectOtelCollector(probes({ env: { ...env, OTELCOL_PATH: '/nope' } }), () => {})).toThrow('OTELCOL_PATH=/nope does not exist');
  });

  it('a cached build is used as it is: Go is not consulted', () => {
    const p = probes({
      files: [cached],
      findGo: () => {
        throw new Error('Go must not be consulted');
      },
    });
    expect(selectOtelCollector(p, () => {})).toEqual({ path: cached, source: 'cache' });
    expect(p.builds).toEqual([]);
  });

  it('builds into the cache with Go when missing, saying so', () => {
    const logs: string[] = [];
    const p = probes({ findGo: () => '/usr/local/go/bin/go' });
    expect(selectOtelCollector(p, (m) => logs.push(m))).toEqual({ path: cached, source: 'go' });
    expect(p.builds).toEqual([cached]);
    expect(logs[0]).toContain(`building the OpenTelemetry Collector v${OTEL_COLLECTOR_VERSION}`);
  });

  it('without Go it says what to install', () => {
    expect(() => selectOtelCollector(probes(), () => {})).toThrow(noCollectorMessage());
    expect(noCollectorMessage()).toContain('https://go.dev/dl/');
    expect(noCollectorMessage()).toContain('OTELCOL_PATH');
  });

  it('the Go module builds the pinned release: every collector module at it (stable ones at their v1 twin)', () => {
    const gomod = fs.readFileSync(path.join(OTELCOL_SOURCE_DIR, 'go.mod'), 'utf8');
    const requires = [...gomod.matchAll(/^\s+(\S+) (v\S+)/gm)].map((m) => ({ module: m[1], version: m[2] }));
    expect(requires).toContainEqual({ module: 'go.opentelemetry.io/collector/otelcol', version: `v${OTEL_COLLECTOR_VERSION}` });
    expect(requires).toContainEqual({ module: 'go.opentelemetry.io/collector/receiver/otlpreceiver', version: `v${OTEL_COLLECTOR_VERSION}` });
    const collector = requires.filter((r) => r.module.startsWith('go.opentelemetry.io/collector/'));
    const [, minor] = OTEL_COLLECTOR_VERSION.split('.');
    const unstable = new Set(collector.filter((r) => r.version.startsWith('v0.')).map((r) => r.version));
    const stable = new Set(collector.filter((r) => r.version.startsWith('v1.')).map((r) => r.version));
    expect([...unstable]).toEqual([`v${OTEL_COLLECTOR_VERSION}`]);
    expect(stable.size).toBe(1);
    // Contrib releases the same minor (its patch releases may be ahead).
    for (const r of requires.filter((r) => r.module.startsWith('github.com/open-telemetry/opentelemetry-collector-contrib/'))) {
      expect(r.version).toMatch(new RegExp(`^v0\\.${minor}\\.\\d+$`));
    }
  });
});
