/**
 * A real OTLP receiver for the tests: the smallest OpenTelemetry Collector (scripts/otelcol: the
 * OTLP receiver and the file exporter), built from the Go module proxy once per machine into
 * ~/.cache/tollgate/otelcol-v<version>/ the way the Temporal CLI is, and started by the test that
 * reads Tollgate's spans back from it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startListening } from './listening-process';
import { OTEL_COLLECTOR_VERSION } from './versions';

/** The Go module with the collector's main package; its go.mod pins every collector module. */
export const OTELCOL_SOURCE_DIR = path.resolve(__dirname, '..', 'otelcol');

export function otelCollectorCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'tollgate', `otelcol-v${OTEL_COLLECTOR_VERSION}`);
}

export function noCollectorMessage(): string {
  return (
    `No OpenTelemetry Collector for the OTLP test: none at $OTELCOL_PATH, none cached in ${otelCollectorCacheDir()}, ` +
    `and Go is not installed to build it.\n` +
    `Do one of:\n` +
    `  1. install Go (https://go.dev/dl/) and run again: Tollgate builds it once into the cache from ${OTELCOL_SOURCE_DIR};\n` +
    `  2. build that directory elsewhere (\`go build -trimpath -o otelcol .\`) and set OTELCOL_PATH=/path/to/otelcol.`
  );
}

/** Everything the selection touches, injectable so the order can be tested without Go. */
export interface CollectorProbes {
  env: NodeJS.ProcessEnv;
  exists(p: string): boolean;
  findGo(): string | null;
  /** Builds scripts/otelcol into `out`. */
  build(go: string, out: string): void;
}

export type CollectorSource = 'env' | 'cache' | 'go';

export function selectOtelCollector(probes: CollectorProbes, log: (msg: string) => void): { path: string; source: CollectorSource } {
  const fromEnv = probes.env.OTELCOL_PATH;
  if (fromEnv) {
    if (!probes.exists(fromEnv)) throw new Error(`OTELCOL_PATH=${fromEnv} does not exist`);
    return { path: fromEnv, source: 'env' };
  }
  const cached = path.join(otelCollectorCacheDir(probes.env), 'otelcol');
  if (probes.exists(cached)) return { path: cached, source: 'cache' };
  const go = probes.findGo();
  if (!go) throw new Error(noCollectorMessage());
  log(`[tollgate] building the OpenTelemetry Collector v${OTEL_COLLECTOR_VERSION} (OTLP receiver for the tests) with Go into ${path.dirname(cached)} (first run only, a minute or two)…`);
  probes.build(go, cached);
  if (!probes.exists(cached)) throw new Error(`go build finished but ${cached} is missing`);
  return { path: cached, source: 'go' };
}

function findGo(): string | null {
  const r = spawnSync('sh', ['-c', 'command -v go'], { encoding: 'utf8' });
  const first = r.stdout?.split('\n')[0]?.trim();
  if (r.status === 0 && first) return first;
  return fs.existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : null;
}

export const systemCollectorProbes: CollectorProbes = {
  env: process.env,
  exists: (p) => fs.existsSync(p),
  findGo,
  build: (go, out) => {
    fs.mkdirSync(path.dirname(out), { recursive: true });
    // Built under a private name then renamed, so a concurrent run never starts a half-written binary.
    const staged = `${out}.${process.pid}.tmp`;
    // go.sum is complete: -mod=readonly builds exactly the pinned modules. -trimpath and no VCS stamp
    // make the binary the same wherever it is built.
    execFileSync(go, ['build', '-trimpath', '-o', staged, '.'], {
      stdio: 'inherit',
      cwd: OTELCOL_SOURCE_DIR,
      env: { ...process.env, GOFLAGS: '-mod=readonly -buildvcs=false' },
    });
    fs.renameSync(staged, out);
  },
};

/** $OTELCOL_PATH, else the cached build, else builds it (throws saying what to install without Go). */
export function ensureOtelCollector(log: (msg: string) => void = console.log): string {
  return selectOtelCollector(systemCollectorProbes, log).path;
}

/** One span as the collector wrote it (OTLP JSON), with its resource's attributes. */
export interface ReceivedSpan {
  resource: Record<string, unknown>;
  scope: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  /** OTLP StatusCode: 0 unset, 1 ok, 2 error. */
  status: { code?: number };
  /** Attribute values with their OTLP JSON type kept: `{ intValue: "12" }`, `{ stringValue: "chat" }`, ... */
  attributes: Record<string, OtlpAnyValue>;
}

export type OtlpAnyValue = { stringValue?: string; intValue?: string; doubleValue?: number; boolValue?: boolean; arrayValue?: unknown; kvlistValue?: unknown };

interface OtlpKeyValue {
  key: string;
  value: OtlpAnyValue;
}

export interface OtelCollector {
  /** Base URL for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  endpoint: string;
  /** Every span received so far, in arrival order. */
  spans(): ReceivedSpan[];
  stop(): Promise<void>;
}

function attributeMap(kvs: OtlpKeyValue[] | undefined): Record<string, OtlpAnyValue> {
  return Object.fromEntries((kvs ?? []).map((kv) => [kv.key, kv.value]));
}

/**
 * Starts the collector receiving OTLP/HTTP on 127.0.0.1:`port` and writing what it receives to a
 * file (OTLP JSON, one export request a line) that `spans()` reads. Its own telemetry is off, so
 * it opens no port but the receiver's.
 */
export async function startOtelCollector(opts: { bin: string; port: number }): Promise<OtelCollector> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-otelcol-'));
  const tracesFile = path.join(dir, 'traces.jsonl');
  const configFile = path.join(dir, 'config.yaml');
  fs.writeFileSync(
    configFile,
    [
      'receivers:',
      '  otlp:',
      '    protocols:',
      '      http:',
      `        endpoint: 127.0.0.1:${opts.port}`,
      'exporters:',
      '  file:',
      `    path: ${JSON.stringify(tracesFile)}`,
      '    flush_interval: 20ms',
      'service:',
      '  telemetry:',
      '    metrics:',
      '      level: none',
      '    logs:',
      '      level: warn',
      '  pipelines:',
      '    traces:',
      '      receivers: [otlp]',
      '      exporters: [file]',
      '',
    ].join('\n'),
  );
  const server = await startListening({ name: 'the OpenTelemetry Collector', bin: opts.bin, args: [`--config=${configFile}`], port: opts.port, timeoutMs: 30_000, pollMs: 50 });
  return {
    endpoint: `http://127.0.0.1:${opts.port}`,
    spans() {
      if (!fs.existsSync(tracesFile)) return [];
      const lines = fs.readFileSync(tracesFile, 'utf8').split('\n');
      const out: ReceivedSpan[] = [];
      // The last line may be one the exporter is still writing: only complete lines are read.
      for (const line of lines.slice(0, -1)) {
        const req = JSON.parse(line) as {
          resourceSpans?: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans?: { scope?: { name?: string }; spans?: (Omit<ReceivedSpan, 'resource' | 'scope' | 'attributes'> & { attributes?: OtlpKeyValue[] })[] }[] }[];
        };
        for (const rs of req.resourceSpans ?? []) {
          const resource = Object.fromEntries(Object.entries(attributeMap(rs.resource?.attributes)).map(([k, v]) => [k, Object.values(v)[0]]));
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              out.push({ ...s, resource, scope: ss.scope?.name ?? '', status: s.status ?? {}, attributes: attributeMap(s.attributes) });
            }
          }
        }
      }
      return out;
    },
    stop: async () => {
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
