/**
 * sdk/src/schema.d.ts must be what openapi-typescript makes of the current document: a route or
 * schema change without `npx tsx sdk/scripts/generate.mjs` fails here.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

describe('SDK types', () => {
  it('are generated from the current OpenAPI document', () => {
    const root = path.join(__dirname, '../../..');
    // openapi-typescript is ESM-only: run the generator's check in a child process.
    const out = execFileSync(process.execPath, [require.resolve('tsx/cli'), 'sdk/scripts/generate.mjs', '--check'], { cwd: root, encoding: 'utf8', stdio: 'pipe' });
    expect(out).toContain('is current');
  });
});
