/**
 * The bench stack: a throwaway PostgreSQL database (migrated), a Temporal dev server, the provider
 * emulator and Tollgate (`src/main.ts`, API + worker in one process or, with BENCH_ROLE=api, an API
 * process and a worker process; LOG_LEVEL=info, the product's default, unless BENCH_LOG_LEVEL says
 * otherwise; its log written to a file) as child
 * processes, and optionally Portkey's open-source gateway pointed at nothing in particular (the
 * caller chooses its upstream per request with `x-portkey-custom-host`). Every step registers its
 * own teardown.
 */
import fs from 'node:fs';
import os from 'node:os';
import { bundleWorkflows } from '../../src/temporal/worker';
import path from 'node:path';
import { ensureTemporalCli } from '../../scripts/lib/temporal-cli';
import { createDatabaseIfMissing, dropDatabase, ensurePostgres, withDatabase } from '../../scripts/lib/postgres';
import { freePort, startTemporalDevServer } from '../../scripts/lib/temporal-dev-server';
import { migrate } from '../../src/db/migrate';
import { createPool, type Db } from '../../src/db/pool';
import { createProject } from '../../src/db/repositories/projects';
import { createApiKey } from '../../src/db/repositories/api-keys';
import { MALLOC_ARENA_MAX } from '../../src/runtime/heap';
import { type Child, spawnChild, type Teardown, track, waitReady } from './children';
import { SOURCE_NODE_ARGS } from '../../scripts/lib/source-node-args';
import { buildForDev, DEV_BUILD_NODE_ARGS } from '../../scripts/lib/dev-build';

export const ROOT = path.resolve(__dirname, '..', '..');
/** The bench stack's /metrics bearer token (production mode refuses /metrics without one). */
export const BENCH_METRICS_TOKEN = 'bench-metrics';
/** A fixed master key (32 bytes, base64) for the bench's throwaway databases. */
export const BENCH_MASTER_KEY = Buffer.alloc(32, 7).toString('base64');

export interface Stack {
  databaseUrl: string;
  db: Db;
  emulatorUrl: string;
  emulator: Child;
  tollgateUrl: string;
  /** API and worker in one process, or the API process (`--role api`) when BENCH_ROLE=api. */
  tollgate: Child;
  /** The worker process (`--role worker`) when BENCH_ROLE=api; else null. */
  worker: Child | null;
  portkeyUrl: string | null;
  portkey: Child | null;
  /** The Temporal dev server's process (its CPU is reported per request). */
  temporalPid: number;
  /** A second Tollgate built from another checkout (`baselineDir`), on the same database and Temporal; else null. */
  baselineUrl: string | null;
  baseline: Child | null;
  /** An Enterprise-plan project (default policy) and a client API key for it. */
  newProjectKey(name: string): Promise<{ projectId: string; key: string }>;
}

export async function startStack(opts: {
  name: string;
  teardown: Teardown;
  log: (m: string) => void;
  portkey?: boolean;
  /** Write a V8 CPU profile of the Tollgate process into this directory when it exits. */
  cpuProfDir?: string;
  /** Also start the compiled build of the checkout in this directory (its `npm run build`), for A/B runs. */
  baselineDir?: string;
  /** An existing database (kept, never dropped) instead of a new one, e.g. a history loaded by an earlier run. */
  database?: string;
  /** Runs on the migrated database before Tollgate starts (e.g. to load a history its workers then find in place). */
  beforeTollgate?: (db: Db, databaseUrl: string) => Promise<void>;
  /** Added to the Tollgate processes' environment (e.g. another provider's base URL). */
  env?: NodeJS.ProcessEnv;
}): Promise<Stack> {
  const { teardown, log } = opts;
  const dataDir = path.join(ROOT, '.data');
  fs.mkdirSync(dataDir, { recursive: true });
  const cli = await ensureTemporalCli(log);
  const serverUrl = await ensurePostgres(dataDir, log);
  const database = opts.database ?? `tollgate_bench_${opts.name}_${Date.now()}`;
  await createDatabaseIfMissing(serverUrl, database);
  // BENCH_KEEP_DB=1 keeps the database for inspection (psql) after the run.
  if (process.env.BENCH_KEEP_DB !== '1' && !opts.database) teardown.add('drop database', () => dropDatabase(serverUrl, database));
  const databaseUrl = withDatabase(serverUrl, database);
  await migrate(databaseUrl);

  const temporal = await startTemporalDevServer({ cli, port: await freePort(), logFile: fs.createWriteStream(path.join(dataDir, `bench-${opts.name}-temporal.log`)) });
  track(temporal.process);
  teardown.add('temporal', () => temporal.stop());

  const db = createPool(databaseUrl, 2);
  teardown.add('pool', () => db.end());
  if (opts.beforeTollgate) await opts.beforeTollgate(db, databaseUrl);

  // As `npm run dev` runs TypeScript (scripts/lib/source-node-args.ts).
  const tsx = (script: string, nodeArgs: string[] = []) => [...nodeArgs, ...SOURCE_NODE_ARGS, script];

  const emuPort = await freePort();
  const emulatorUrl = `http://127.0.0.1:${emuPort}`;
  const emulator = spawnChild('emulator', process.execPath, tsx('emulator/main.ts'), { cwd: ROOT, env: { PORT: String(emuPort), HOST: '127.0.0.1' }, echoStderr: true });
  teardown.add('emulator', () => emulator.stop());
  await waitReady(emulator, `${emulatorUrl}/health`);

  let portkey: Child | null = null;
  let portkeyUrl: string | null = null;
  if (opts.portkey) {
    const port = await freePort();
    portkeyUrl = `http://127.0.0.1:${port}`;
    // Flags read in build/start-server.js: `--port=N` (default 8787) and `--headless` (no UI or log
    // stream routes). The preload works around Portkey's broken streaming on Node (see the file).
    const p = spawnChild(
      'portkey',
      process.execPath,
      ['--require', path.join(__dirname, 'portkey-preload.cjs'), path.join(ROOT, 'node_modules/@portkey-ai/gateway/build/start-server.js'), `--port=${port}`, '--headless'],
      { cwd: ROOT, env: { NODE_ENV: 'production' } },
    );
    portkey = p;
    teardown.add('portkey', () => p.stop());
    await waitReady(p, `${portkeyUrl}/`);
  }

  const tgPort = await freePort();
  const tollgateUrl = `http://127.0.0.1:${tgPort}`;
  // A prebuilt workflow bundle, as a production deployment runs (`npm run build`): bundling at
  // start would keep webpack's memory in the measured process.
  const bundlePath = path.join(os.tmpdir(), `tollgate-bench-workflows-${process.pid}.js`);
  fs.writeFileSync(bundlePath, await bundleWorkflows());
  teardown.add('workflow bundle', async () => fs.rmSync(bundlePath, { force: true }));
  const prof = opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(opts.cpuProfDir)}`] : [];
  // The compiled build (`npm run build`, as production runs it) when present; else through tsx.
  const compiled = path.join(ROOT, 'dist', 'src', 'main.js');
  // BENCH_DEV=1: as `npm run dev` runs it — transpiled at start with its Node flags, NODE_ENV=development,
  // the access log at info (one line per request), written to a file directly as dev writes it.
  const devLike = process.env.BENCH_DEV === '1';
  const useBuild = fs.existsSync(compiled) && process.env.BENCH_TSX !== '1' && !devLike;
  // The product's default level, info (one access log line per request), unless BENCH_LOG_LEVEL
  // says otherwise: at warn the figures left out the access log's cost.
  const logLevel = process.env.BENCH_LOG_LEVEL ?? 'info';
  log(`tollgate runs ${useBuild ? 'the compiled build (dist/)' : devLike ? 'as npm run dev does (.dev-build/)' : 'from source through tsx'}${devLike ? ', NODE_ENV=development' : ''}, LOG_LEVEL=${logLevel}`);
  // API and worker in one process, as `npm run dev` runs them; BENCH_ROLE=api runs docker-compose's
  // topology instead: an API process (the hot path) and a worker process. Two builds side by side
  // always run split: the singleton maintenance workflows (checkpoints, reconciliation, retention)
  // run on the first worker's task queue and do the work of both builds' calls, so a build with a
  // worker in its process was charged for the other's background work (an identical build measured
  // a quarter more CPU per request on the side that started first).
  const topology = process.env.BENCH_ROLE === 'api' || opts.baselineDir ? 'split' : 'all';
  const taskQueue = `bench-${opts.name}-${Date.now()}`;
  const tollgateEnv = (role: 'api' | 'worker' | 'all', port: number): NodeJS.ProcessEnv => ({
    NODE_ENV: devLike ? 'development' : 'production',
    TOLLGATE_ROLE: role,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: logLevel,
    METRICS_TOKEN: BENCH_METRICS_TOKEN,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: taskQueue,
    TEMPORAL_WORKFLOW_BUNDLE: bundlePath,
    // As a production deployment must set it (docs/decisions/secrets-at-rest.md): without it the compliance signing
    // key cannot be sealed, so NODE_ENV=production skipped every checkpoint (the activity failed
    // and was retried) and the compiled build's figures left out the checkpoints' CPU.
    TOLLGATE_MASTER_KEY: BENCH_MASTER_KEY,
    OPENAI_BASE_URL: `${emulatorUrl}/openai`,
    OPENAI_API_KEY: 'bench',
    // As `npm run dev`, `npm start` and the Docker image run it (src/runtime/heap.ts).
    MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? MALLOC_ARENA_MAX,
    ...opts.env,
  });
  const nodeFlags = process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(' ') : [];
  // BENCH_DEV=1 runs the transpiled copy `npm run dev` runs (scripts/lib/dev-build.ts); BENCH_TSX=1 runs through tsx.
  const devMain = devLike ? await buildForDev() : null;
  const tollgateArgs = (cpuProf: string[]) =>
    useBuild ? [...cpuProf, ...nodeFlags, compiled] : devMain ? [...cpuProf, ...nodeFlags, ...DEV_BUILD_NODE_ARGS, devMain] : tsx('src/main.ts', cpuProf);
  let worker: Child | null = null;
  if (topology === 'split') {
    const w = spawnChild('tollgate-worker', process.execPath, tollgateArgs([]), { cwd: ROOT, echoStderr: true, env: tollgateEnv('worker', await freePort()) });
    worker = w;
    teardown.add('tollgate worker', () => w.stop(15_000));
  }
  log(`tollgate topology: ${topology === 'split' ? 'an API process and a worker process' : 'API and worker in one process'}`);
  // Its log goes to a file, as `npm run dev` and a container runtime take it, not through this process (the load generator's).
  const tollgateLog = path.join(os.tmpdir(), `tollgate-bench-${process.pid}.log`);
  const tollgate = spawnChild('tollgate', process.execPath, tollgateArgs(prof), {
    cwd: ROOT,
    echoStderr: true,
    env: tollgateEnv(topology === 'split' ? 'api' : 'all', tgPort),
    stdoutFile: tollgateLog,
  });
  teardown.add('tollgate log', async () => fs.rmSync(tollgateLog, { force: true }));
  // Graceful stop first (the CPU profile is written on a normal exit), before Temporal goes away.
  teardown.add('tollgate', () => tollgate.stop(15_000));
  await waitReady(tollgate, `${tollgateUrl}/v1/public/status/summary`);

  let baseline: Child | null = null;
  let baselineUrl: string | null = null;
  if (opts.baselineDir) {
    const dir = path.resolve(opts.baselineDir);
    const main = path.join(dir, 'dist', 'src', 'main.js');
    if (!fs.existsSync(main)) throw new Error(`baseline: ${main} is missing (run npm run build in ${dir})`);
    const port = await freePort();
    baselineUrl = `http://127.0.0.1:${port}`;
    // Its log to a file too, as the new build's: drained through this process, the two builds
    // would not log on equal terms.
    const baselineLog = path.join(os.tmpdir(), `tollgate-bench-baseline-${process.pid}.log`);
    // BENCH_BASELINE_NODE_FLAGS (when set, even empty) gives the baseline flags of its own: the same
    // build on both sides then measures a Node flag or a preload.
    const baselineFlags = process.env.BENCH_BASELINE_NODE_FLAGS !== undefined ? process.env.BENCH_BASELINE_NODE_FLAGS.split(' ').filter(Boolean) : nodeFlags;
    const b = spawnChild('baseline', process.execPath, [...baselineFlags, main], {
      cwd: dir,
      echoStderr: true,
      // An API process as the new build's: the one worker process (the new build's) runs the workflows both start.
      env: tollgateEnv('api', port),
      stdoutFile: baselineLog,
    });
    teardown.add('baseline log', async () => fs.rmSync(baselineLog, { force: true }));
    baseline = b;
    teardown.add('baseline', () => b.stop(15_000));
    await waitReady(b, `${baselineUrl}/v1/public/status/summary`);
    log(`baseline tollgate: ${dir}`);
  }

  return {
    baselineUrl,
    baseline,
    databaseUrl,
    db,
    emulatorUrl,
    emulator,
    tollgateUrl,
    tollgate,
    worker,
    portkeyUrl,
    portkey,
    temporalPid: temporal.process.pid!,
    newProjectKey: async (name) => {
      const project = await createProject(db, { name, plan: 'enterprise' });
      const { key } = await createApiKey(db, { projectId: project.id, scope: 'client' });
      return { projectId: project.id, key };
    },
  };
}

/**
 * Resident memory of a process by mapping (/proc/<pid>/smaps): file-backed mappings by file name,
 * anonymous ones as `[anon]` (V8's heap, malloc arenas, thread stacks), largest first, in MiB.
 */
export function rssByMapping(pid: number): { name: string; mib: number }[] {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return [];
  }
  const totals = new Map<string, number>();
  let name = '[anon]';
  for (const line of text.split('\n')) {
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      name = header[1] ? path.basename(header[1]) : '[anon]';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) totals.set(name, (totals.get(name) ?? 0) + Number(rss[1]) / 1024);
  }
  return [...totals].map(([n, mib]) => ({ name: n, mib })).sort((a, b) => b.mib - a.mib);
}

/** VmRSS and VmHWM (peak) of a live process, in MiB, from /proc/<pid>/status. */
export function rssMiB(pid: number): { rss: number; peak: number } | null {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
  } catch {
    return null;
  }
}
