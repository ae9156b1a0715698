/**
 * Packages a serving process may never use are loaded on first use, not at start-up
 * (docs/decisions/lazy-modules.md): a process with tracing off, one that does
 * not migrate and one that makes no MCP call must not hold them. Checked in a fresh Node process,
 * because jest's module registry is not Node's.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { SOURCE_NODE_ARGS } from '../../../scripts/lib/source-node-args';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/**
 * Modules in require.cache after importing what src/main.ts imports (without running it): `server`
 * is the server's import graph alone; `all` adds main's own imports, tracing and migrate.
 */
function loadedAtStart(): { server: string[]; all: string[] } {
  const script = `
    require('./src/server.ts');
    const server = Object.keys(require.cache);
    require('./src/telemetry/tracing.ts');
    require('./src/db/migrate.ts');
    process.stdout.write(JSON.stringify({ server, all: Object.keys(require.cache) }));
  `;
  const out = execFileSync(process.execPath, [...SOURCE_NODE_ARGS, '-e', script], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, NODE_ENV: 'test' } });
  return JSON.parse(out) as { server: string[]; all: string[] };
}

describe('modules loaded on first use', () => {
  jest.setTimeout(60_000);
  let loaded: { server: string[]; all: string[] };
  beforeAll(() => {
    loaded = loadedAtStart();
  });
  const has = (fragment: string) => loaded.all.some((k) => k.includes(fragment));

  it('the server imports the modules that load them lazily (so the checks below mean something)', () => {
    const inServer = (file: string) => loaded.server.some((k) => k.endsWith(path.join('src', file)));
    expect(inServer(path.join('telemetry', 'tracing.ts'))).toBe(true);
    expect(inServer(path.join('mcp', 'client.ts'))).toBe(true);
  });

  it.each([
    ['the OpenTelemetry SDK (tracing off)', '/node_modules/@opentelemetry/sdk-trace-node/'],
    ['the OTLP exporter (tracing off)', '/node_modules/@opentelemetry/exporter-trace-otlp-http/'],
    ['the migration runner', '/node_modules/node-pg-migrate/'],
    ['the MCP SDK', '/node_modules/@modelcontextprotocol/sdk/'],
  ])('does not load %s', (_what, fragment) => {
    expect(has(fragment)).toBe(false);
  });
});
