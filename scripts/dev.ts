/**
 * `npm run dev`: brings up everything on a fresh clone — Temporal CLI (built once into a cache),
 * PostgreSQL, migrations, the Temporal dev server with its Web UI, the provider emulator, and the
 * Tollgate process — then creates a demo project and prints how to call it. Ctrl-C stops it all.
 */
import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createPool } from '../src/db/pool';
import { migrate } from '../src/db/migrate';
import { createApiKey, findApiKeyByKey } from '../src/db/repositories/api-keys';
import { createProject, findProject } from '../src/db/repositories/projects';
import { PROVIDER_IDS, providerEnvNames, readEnvFile } from '../src/config';
import { ensureTemporalCli } from './lib/temporal-cli';
import { SOURCE_NODE_ARGS } from './lib/source-node-args';
import { buildForDev, DEV_BUILD_NODE_ARGS } from './lib/dev-build';
import { createDatabaseIfMissing, ensurePostgres, withDatabase } from './lib/postgres';
import { portOpen } from './lib/listening-process';
import { startTemporalDevServer, DevServer } from './lib/temporal-dev-server';
import { ensureDashboard } from './lib/dashboard';
import { addMember, createUser } from '../src/auth/users';
import { findUserByEmail, setUserPasswordHash } from '../src/db/repositories/users';
import { hashPassword } from '../src/auth/passwords';
import { randomBytes } from 'node:crypto';
import { MALLOC_ARENA_MAX } from '../src/runtime/heap';
import { bundleWorkflows } from '../src/temporal/worker';

const root = path.resolve(__dirname, '..');
const dataDir = path.join(root, '.data');
const envFile = path.join(dataDir, 'dev.env');
const log = (msg: string) => console.log(msg);
const startedAt = performance.now();

const API_PORT = Number(process.env.PORT ?? 8080);
const TEMPORAL_PORT = Number(process.env.TEMPORAL_PORT ?? 7233);
const TEMPORAL_UI_PORT = Number(process.env.TEMPORAL_UI_PORT ?? 8233);
const EMULATOR_PORT = Number(process.env.EMULATOR_PORT ?? 8090);

const DEMO_EMAIL = 'demo@tollgate.local';

const children: ChildProcess[] = [];
let temporal: DevServer | null = null;

/** A child process of the stack; `args` are Node's (flags, script, its arguments). */
function startChild(name: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const logFile = path.join(dataDir, `${name}.log`);
  // stdout (the JSON log, a line per request at info) goes to the file directly: piped through
  // this process, every line woke it to copy the line, on the same cores as the stack it serves.
  // stderr (a crash's stack, warnings) still passes here, to echo errors to the terminal.
  const stdoutFd = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', stdoutFd, 'pipe'] });
  fs.closeSync(stdoutFd);
  const logStream = fs.createWriteStream(logFile, { flags: 'a' });
  child.stderr!.pipe(logStream);
  child.stderr!.on('data', (d: Buffer) => {
    const text = d.toString();
    if (/error|fatal/i.test(text)) process.stderr.write(`[${name}] ${text}`);
  });
  child.on('exit', (code) => {
    if (!shuttingDown) {
      console.error(`[tollgate] ${name} exited with code ${code}; see .data/${name}.log`);
      void shutdown(1);
    }
  });
  children.push(child);
  return child;
}

async function waitFor(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`${url} did not become ready in ${timeoutMs / 1000}s`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

let shuttingDown = false;
async function shutdown(code: number): Promise<never> {
  shuttingDown = true;
  for (const c of children) c.kill('SIGTERM');
  await Promise.all(children.map((c) => (c.exitCode !== null ? null : new Promise((r) => c.once('exit', r)))));
  if (temporal) await temporal.stop();
  process.exit(code);
}

async function main(): Promise<void> {
  fs.mkdirSync(dataDir, { recursive: true });
  // A Temporal server already listening (e.g. `temporal server start-dev` run by hand) needs no CLI here.
  const cli = (await portOpen(TEMPORAL_PORT)) ? null : await ensureTemporalCli(log);
  const serverUrl = await ensurePostgres(dataDir, log);
  const databaseUrl = process.env.DATABASE_URL && serverUrl === process.env.DATABASE_URL ? serverUrl : withDatabase(serverUrl, 'tollgate_dev');
  if (databaseUrl !== process.env.DATABASE_URL) await createDatabaseIfMissing(serverUrl, 'tollgate_dev');
  const applied = await migrate(databaseUrl);
  if (applied.length) log(`[tollgate] applied migrations: ${applied.join(', ')}`);

  let temporalAddress = `127.0.0.1:${TEMPORAL_PORT}`;
  if (await portOpen(TEMPORAL_PORT)) {
    log(`[tollgate] port ${TEMPORAL_PORT} is in use: assuming a Temporal server is already running there`);
  } else {
    temporal = await startTemporalDevServer({
      cli: cli ?? (await ensureTemporalCli(log)),
      port: TEMPORAL_PORT,
      uiPort: TEMPORAL_UI_PORT,
      dbFile: path.join(dataDir, 'temporal.db'),
      logFile: fs.createWriteStream(path.join(dataDir, 'temporal.log'), { flags: 'a' }),
    });
    temporalAddress = temporal.address;
  }

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'development',
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_UI_URL: `http://127.0.0.1:${TEMPORAL_UI_PORT}`,
    PORT: String(API_PORT),
    // Webhooks to a receiver on this machine (the SSRF guard refuses loopback otherwise).
    WEBHOOK_ALLOWED_HOSTS: process.env.WEBHOOK_ALLOWED_HOSTS ?? '127.0.0.1,localhost,::1',
  };

  let emulatorUrl: string | null = null;
  if (fs.existsSync(path.join(root, 'emulator', 'main.ts'))) {
    startChild('emulator', [...SOURCE_NODE_ARGS, 'emulator/main.ts'], { ...env, PORT: String(EMULATOR_PORT) });
    emulatorUrl = `http://127.0.0.1:${EMULATOR_PORT}`;
    await waitFor(`${emulatorUrl}/health`, 30_000);
    for (const p of PROVIDER_IDS) {
      const names = providerEnvNames(p);
      // Real keys configured → real provider; otherwise the emulator stands in.
      if (!process.env[names.apiKey]) {
        env[names.baseUrl] = `${emulatorUrl}/${p}`;
        env[names.apiKey] = 'emulator-key';
      }
    }
  }

  ensureDashboard(log);
  // Workflow code is bundled here, not by the worker at start: webpack's memory then stays in this
  // supervisor instead of the Tollgate process (docs/decisions/dev-stack-runs-compiled-code.md).
  if (!process.env.TEMPORAL_WORKFLOW_BUNDLE) {
    const bundlePath = path.join(dataDir, 'workflow-bundle.js');
    fs.writeFileSync(bundlePath, await bundleWorkflows());
    env.TEMPORAL_WORKFLOW_BUNDLE = bundlePath;
  }
  // From a transpiled copy of the sources, made now (scripts/lib/dev-build.ts).
  startChild('tollgate', [...DEV_BUILD_NODE_ARGS, await buildForDev(), '--role', 'all'], { MALLOC_ARENA_MAX, ...env });
  const url = `http://127.0.0.1:${API_PORT}`;
  await waitFor(`${url}/v1/public/status/summary`, 120_000);

  // Demo project: created once, reused while its keys are still valid.
  const db = createPool(databaseUrl, 2);
  const previous = readEnvFile(envFile);
  let projectId = previous.TOLLGATE_PROJECT_ID;
  let clientKey = previous.TOLLGATE_API_KEY;
  let adminKey = previous.TOLLGATE_ADMIN_KEY;
  const stillValid =
    projectId &&
    (await findProject(db, projectId)) &&
    clientKey &&
    adminKey &&
    !(await findApiKeyByKey(db, clientKey))?.revoked_at &&
    (await findApiKeyByKey(db, clientKey)) &&
    (await findApiKeyByKey(db, adminKey));
  if (!stillValid) {
    const project = await createProject(db, { name: 'demo', plan: 'production' });
    projectId = project.id;
    clientKey = (await createApiKey(db, { projectId, scope: 'client', name: 'demo client' })).key;
    adminKey = (await createApiKey(db, { projectId, scope: 'admin', name: 'demo admin' })).key;
  }
  // A demo user for the dashboard, owner of the demo project; the password is kept in .data/dev.env.
  let demoPassword = previous.TOLLGATE_DASHBOARD_PASSWORD;
  const demoUser = await findUserByEmail(db, DEMO_EMAIL);
  if (!demoUser) {
    demoPassword = randomBytes(12).toString('base64url');
    await createUser(db, { email: DEMO_EMAIL, password: demoPassword });
  } else if (!demoPassword) {
    demoPassword = randomBytes(12).toString('base64url');
    await setUserPasswordHash(db, demoUser.id, await hashPassword(demoPassword));
  }
  await addMember(db, { email: DEMO_EMAIL, projectId, role: 'owner' });
  await db.end();

  const lines = [
    `TOLLGATE_URL=${url}`,
    `TOLLGATE_PROJECT_ID=${projectId}`,
    `TOLLGATE_API_KEY=${clientKey}`,
    `TOLLGATE_ADMIN_KEY=${adminKey}`,
    `TEMPORAL_UI_URL=http://127.0.0.1:${TEMPORAL_UI_PORT}`,
    `TOLLGATE_DASHBOARD_URL=${url}/dashboard`,
    `TOLLGATE_DASHBOARD_EMAIL=${DEMO_EMAIL}`,
    `TOLLGATE_DASHBOARD_PASSWORD=${demoPassword}`,
    ...(emulatorUrl ? [`TOLLGATE_EMULATOR_URL=${emulatorUrl}`] : []),
    // The operators' CLI (`npm run cli`) reads this when DATABASE_URL is not set (src/config.ts).
    `DATABASE_URL=${databaseUrl}`,
  ];
  fs.writeFileSync(envFile, lines.join('\n') + '\n', { mode: 0o600 });
  log(`\nTollgate is up in ${((performance.now() - startedAt) / 1000).toFixed(1)} s. (written to .data/dev.env; logs in .data/*.log)\n`);
  for (const l of lines) log(`  ${l}`);
  log(`\n  curl $TOLLGATE_URL/v1/public/status/summary\n\nCtrl-C stops everything.`);
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));
main().catch((err) => {
  console.error(`[tollgate] ${err instanceof Error ? err.message : String(err)}`);
  void shutdown(1);
});
