/**
 * The transpiled copy `npm run dev` runs the Tollgate process from (scripts/lib/dev-build.ts):
 * every source module and the files modules read next to themselves are there, it loads, and its
 * stack traces name the TypeScript lines, with dependencies' source maps left unread.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { buildForDev, DEV_BUILD_NODE_ARGS } from '../../../scripts/lib/dev-build';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('buildForDev', () => {
  // Directly under the project root, as `.dev-build/` is; its own name so a running `npm run dev` keeps its copy.
  const outDir = path.join(ROOT, `.dev-build-test-${process.pid}`);
  let main: string;

  beforeAll(async () => {
    main = await buildForDev(outDir);
  }, 60_000);
  afterAll(() => fs.rmSync(outDir, { recursive: true, force: true }));

  function run(script: string): string {
    return execFileSync(process.execPath, [...DEV_BUILD_NODE_ARGS, '-e', script], { cwd: ROOT, encoding: 'utf8' });
  }

  it('writes every source module, with the JSON and SQL files modules read beside them', () => {
    expect(main).toBe(path.join(outDir, 'src', 'main.js'));
    for (const f of ['src/main.js', 'src/governance/firewall/worker.js', 'activities/index.js', 'workflows/index.js', 'src/governance/firewall/classifier-weights.json']) {
      expect(fs.existsSync(path.join(outDir, f))).toBe(true);
    }
    const migrations = fs.readdirSync(path.join(ROOT, 'src', 'db', 'migrations')).filter((f) => f.endsWith('.sql'));
    expect(migrations.length).toBeGreaterThan(10);
    expect(fs.readdirSync(path.join(outDir, 'src', 'db', 'migrations')).sort()).toEqual(migrations.sort());
    // Maps name the .ts file and carry no copy of its source.
    const map = JSON.parse(fs.readFileSync(path.join(outDir, 'src', 'providers', 'deadline.js.map'), 'utf8')) as { sources: string[]; sourcesContent?: unknown };
    expect(map.sources.map((s) => path.resolve(path.join(outDir, 'src', 'providers'), s))).toEqual([path.join(ROOT, 'src', 'providers', 'deadline.ts')]);
    expect(map.sourcesContent).toBeUndefined();
  });

  it("loads, and a stack trace names the TypeScript file and line; dependencies' maps stay unread", () => {
    const deadlineTs = fs.readFileSync(path.join(ROOT, 'src', 'providers', 'deadline.ts'), 'utf8').split('\n');
    const out = run(`
      const { findSourceMap } = require('node:module');
      const { deadline } = require(${JSON.stringify(path.join(outDir, 'src', 'providers', 'deadline.js'))});
      // A signal whose first use throws: the frame under the getter is deadline()'s own line.
      const signal = { get aborted() { throw new Error('from the signal'); }, addEventListener() { throw new Error('from the signal'); } };
      let stack = '';
      try { deadline(1000, signal); } catch (e) { stack = e.stack; }
      require('@temporalio/common');
      console.log(JSON.stringify({
        stack,
        config: require(${JSON.stringify(path.join(outDir, 'src', 'config.js'))}).loadConfig !== undefined,
        dependencyMap: findSourceMap(require.resolve('@temporalio/common')) !== undefined,
      }));
    `);
    const r = JSON.parse(out) as { stack: string; config: boolean; dependencyMap: boolean };
    const frame = /\((.*deadline\.ts):(\d+):\d+\)/.exec(r.stack);
    expect(frame?.[1]).toBe(path.join(ROOT, 'src', 'providers', 'deadline.ts'));
    expect(deadlineTs[Number(frame![2]) - 1]).toMatch(/caller\?\.aborted/);
    expect(r.config).toBe(true);
    expect(r.dependencyMap).toBe(false);
  });
});
