/**
 * The Tollgate process of `npm run dev` (and the benches' BENCH_DEV=1) runs from a transpiled copy
 * of the TypeScript, made at start: esbuild writes what the compiled build compiles (`src/`,
 * `activities/`, `workflows/`) to `.dev-build/` (file by file, no type check, well under a second)
 * with source maps that name the .ts lines, and Node runs it with `--enable-source-maps`, so stack
 * traces read as they did through tsx.
 *
 * Through tsx the process kept each file's inline source map, whole sources included, and paid
 * tsx's load hooks: ~30 MiB more than the compiled build idle and 10–30 MiB more after the memory
 * bench's load, which put the dev stack over the 250 MB target more often than the compiled build
 * (docs/decisions/dev-stack-runs-compiled-code.md). The maps written here carry no sources, and
 * dependencies' maps stay unread (no-dependency-source-maps.cjs), as through tsx.
 *
 * `.dev-build/` sits next to `dist/`, one level under the project root, so paths a module resolves
 * from its own directory (the dashboard's files, the firewall's worker) are what they are in the
 * compiled build.
 */
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

const ROOT = path.resolve(__dirname, '..', '..');
export const DEV_BUILD_DIR = path.join(ROOT, '.dev-build');
/** What the compiled build compiles (tsconfig.build.json's `include`: src, workflows, activities). */
const SOURCE_DIRS = (JSON.parse(fs.readFileSync(path.join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] }).include;

/**
 * Node flags for running `.dev-build/`: TypeScript stack traces, dependencies' maps left unread.
 * package.json's `start` spells them out (it cannot import them).
 */
export const DEV_BUILD_NODE_ARGS = ['--enable-source-maps', '--require', path.join(__dirname, 'no-dependency-source-maps.cjs')];

function filesUnder(dir: string, keep: (file: string) => boolean): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name))
    .filter(keep);
}

/**
 * Transpiles the sources into `outDir` (`.dev-build/`) and returns the path of `src/main.js` in it.
 * Another `outDir` must also sit directly under the project root. The copy is written beside it and
 * swapped in whole, so a process already running from `outDir` (a second `npm run dev`, `npm start`
 * or a bench next to it) never loads a module from a half-written copy.
 */
export async function buildForDev(outDir = DEV_BUILD_DIR): Promise<string> {
  const staging = `${outDir}.new-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  const dirs = SOURCE_DIRS.map((d) => path.join(ROOT, d));
  const sources = dirs.flatMap((d) => filesUnder(d, (f) => f.endsWith('.ts') && !f.endsWith('.d.ts')));
  await build({
    entryPoints: sources,
    outdir: staging,
    outbase: ROOT,
    bundle: false,
    format: 'cjs',
    platform: 'node',
    target: `node${process.versions.node.split('.')[0]}`,
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'warning',
  });
  // Modules read these next to themselves (a JSON import, the migrations and functions directories).
  for (const d of dirs) {
    for (const f of filesUnder(d, (file) => /\.(json|sql)$/.test(file))) {
      const to = path.join(staging, path.relative(ROOT, f));
      fs.mkdirSync(path.dirname(to), { recursive: true });
      fs.copyFileSync(f, to);
    }
  }
  // A directory cannot be renamed over a non-empty one: the old copy steps aside first.
  const old = `${outDir}.old-${process.pid}`;
  if (fs.existsSync(outDir)) fs.renameSync(outDir, old);
  fs.renameSync(staging, outDir);
  fs.rmSync(old, { recursive: true, force: true });
  return path.join(outDir, 'src', 'main.js');
}

// `tsx scripts/lib/dev-build.ts`: `npm start` transpiles, then runs the copy with plain Node.
if (require.main === module) {
  buildForDev().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
