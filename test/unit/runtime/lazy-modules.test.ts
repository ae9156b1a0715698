/**
 * Packages a serving process may never use are loaded on first use, not at start-up
 * (docs/decisions.md, "Memory of the gateway process"): a process with tracing off, one that does
 * not migrate and one that makes no MCP call must not hold them. Checked in a fresh Node process,
 * because jest's module registry is not Node's.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');

function loadedAfterServerImport(): string[] {
  const script = `
    require('./src/server.ts');
    require('./src/telemetry/tracing.ts');
    require('./src/db/migrate.ts');
    process.stdout.write(JSON.stringify(Object.keys(require.cache)));
  `;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, NODE_ENV: 'test' } });
  return JSON.parse(out) as string[];
}

describe('modules loaded on first use', () => {
  jest.setTimeout(60_000);
  let loaded: string[];
  beforeAll(() => {
    loaded = loadedAfterServerImport();
  });
  const has = (fragment: string) => loaded.some((k) => k.includes(fragment));

  it('loads the modules that use them (what src/main.ts imports)', () => {
    expect(has(`${path.sep}src${path.sep}telemetry${path.sep}tracing.ts`)).toBe(true);
    expect(has(`${path.sep}src${path.sep}db${path.sep}migrate.ts`)).toBe(true);
    expect(has(`${path.sep}src${path.sep}mcp${path.sep}client.ts`)).toBe(true);
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
