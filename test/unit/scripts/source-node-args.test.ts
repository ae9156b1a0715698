/**
 * The flags TypeScript runs with where it runs through tsx (`npm run dev`'s emulator, the test
 * suite's processes): tsx through CommonJS only, and source maps kept for our own files but not
 * read for dependencies (scripts/lib/no-dependency-source-maps.cjs).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SOURCE_NODE_ARGS } from '../../../scripts/lib/source-node-args';

describe('SOURCE_NODE_ARGS', () => {
  let dir: string;
  const map = JSON.stringify({ version: 3, sources: ['index.ts'], names: [], mappings: 'AAAA' });
  const mapped = 'module.exports = 1;\n//# sourceMappingURL=index.js.map\n';

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'source-node-args-'));
    fs.mkdirSync(path.join(dir, 'node_modules', 'dep'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'node_modules', 'dep', 'index.js'), mapped);
    fs.writeFileSync(path.join(dir, 'node_modules', 'dep', 'index.js.map'), map);
    fs.mkdirSync(path.join(dir, 'own'));
    fs.writeFileSync(path.join(dir, 'own', 'index.js'), mapped);
    fs.writeFileSync(path.join(dir, 'own', 'index.js.map'), map);
    // The throw is on line 6 of the TypeScript; the type-only lines before it vanish when tsx strips types.
    fs.writeFileSync(path.join(dir, 'boom.ts'), 'type Shape = {\n  size: number;\n};\n\nexport function boom(s: Shape): never {\n  throw new Error(`boom ${s.size}`);\n}\n');
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  function run(script: string): string {
    return execFileSync(process.execPath, [...SOURCE_NODE_ARGS, '-e', script], { cwd: dir, encoding: 'utf8' });
  }

  it("keeps our own files' source maps and leaves dependencies' unread", () => {
    const out = run(`
      const { findSourceMap } = require('node:module');
      require('dep'); require('./own');
      console.log(JSON.stringify({
        enabled: process.sourceMapsEnabled,
        dependency: findSourceMap(require.resolve('dep')) !== undefined,
        own: findSourceMap(require.resolve('./own')) !== undefined,
      }));`);
    expect(JSON.parse(out)).toEqual({ enabled: true, dependency: false, own: true });
  });

  it('runs TypeScript through tsx with stack traces on the .ts lines', () => {
    const out = run(`try { require('./boom.ts').boom({ size: 3 }); } catch (e) { console.log(e.message, e.stack.split('\\n')[1].trim()); }`);
    expect(out.trim()).toBe(`boom 3 at Object.boom (${path.join(fs.realpathSync(dir), 'boom.ts')}:6:9)`);
  });
});
