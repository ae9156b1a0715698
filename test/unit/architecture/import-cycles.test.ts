/**
 * No import cycles in the product's code (src/, activities/, workflows/), type-only imports
 * included: a type lives in a module both sides can import, never in the module that uses it.
 */
import path from 'node:path';
import madge from 'madge';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('import graph', () => {
  it('has no cycle', async () => {
    const graph = await madge(['src', 'activities', 'workflows'].map((d) => path.join(ROOT, d)), {
      baseDir: ROOT,
      fileExtensions: ['ts', 'tsx'],
      tsConfig: path.join(ROOT, 'tsconfig.json'),
      detectiveOptions: { ts: { skipTypeImports: false }, tsx: { skipTypeImports: false } },
    });
    expect(graph.circular()).toEqual([]);
    // The graph is the product's: a wrong base directory would find no file and no cycle.
    expect(Object.keys(graph.obj()).length).toBeGreaterThan(200);
  });
});
