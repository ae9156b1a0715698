#!/usr/bin/env node
// Entry point of `npm run dev`, `npm test` and the operators' `npm run cli`. Plain Node with no
// dependencies, because it runs first on whatever Node the machine has: it brings the pinned Node
// runtime when that Node is too old, then installs dependencies when node_modules is missing or
// older than package-lock.json. It uses `npm install` (which follows the committed lock file) rather
// than `npm ci`: npm 11 writes lock files without other platforms' optional packages (@swc/core-*)
// and then refuses them in `npm ci`.
'use strict';
const { spawnSync, spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const mode = process.argv[2];
const rest = process.argv.slice(3);

// scripts/node-runtime.json is the one place that names the oldest supported Node major (as
// package.json "engines" does) and the Node and npm versions pinned for older machines: JSON, so
// that this file (which cannot import TypeScript) and the TypeScript side both read it. Below that
// major, this script runs itself again on the pinned runtime.
const RUNTIME = require('./node-runtime.json');
const MIN_NODE_MAJOR = RUNTIME.minMajor;

function fail(message) {
  console.error(`[tollgate] ${message}`);
  process.exit(1);
}

function runtimeDir() {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'tollgate', `node-v${RUNTIME.node}-${process.platform}-${process.arch}`);
}

/** `npm pack` a registry package into `dir` and check the tarball against the pinned integrity. */
function fetchPackage(name, version, dir) {
  const expected = RUNTIME.integrity[name];
  if (!expected) {
    throw new Error(`Node ${process.versions.node} is older than ${MIN_NODE_MAJOR} and no Node ${RUNTIME.node} runtime is pinned ` +
      `for ${process.platform}-${process.arch} (scripts/node-runtime.json): install Node ${MIN_NODE_MAJOR} or later and run again.`);
  }
  console.log(`[tollgate] fetching ${name}@${version} from the npm registry…`);
  const packed = spawnSync('npm', ['pack', `${name}@${version}`, '--pack-destination', dir, '--ignore-scripts', '--silent'], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const file = path.join(dir, `${name}-${version}.tgz`);
  if (packed.status !== 0 || !fs.existsSync(file)) throw new Error(`npm pack ${name}@${version} failed`);
  const actual = 'sha512-' + crypto.createHash('sha512').update(fs.readFileSync(file)).digest('base64');
  if (actual !== expected) throw new Error(`${name}@${version}: integrity ${actual} does not match the pinned ${expected}`);
  return file;
}

function untar(file, dest, members) {
  fs.mkdirSync(dest, { recursive: true });
  const r = spawnSync('tar', ['-xzf', file, '-C', dest, '--strip-components=1', ...members], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`could not unpack ${file}`);
}

/**
 * The pinned runtime, laid out as Node's own distributions are (bin/node, bin/npm, bin/npx,
 * lib/node_modules/npm), fetched once into the cache. npm comes pinned too, so that installs behave
 * the same on every machine (install-script approvals, lock file format) whatever npm it has.
 */
function ensureRuntime() {
  const dir = runtimeDir();
  const node = path.join(dir, 'bin', 'node');
  if (fs.existsSync(node)) return dir;
  const platformPackage = process.platform === 'linux' ? `node-linux-${process.arch}` : `node-${process.platform}-${process.arch}`;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  // Built beside its final place and renamed into it, so that an interrupted fetch leaves no half runtime.
  const tmp = fs.mkdtempSync(`${dir}.tmp-`);
  fs.chmodSync(tmp, 0o755);
  try {
    const downloads = path.join(tmp, 'downloads');
    fs.mkdirSync(downloads);
    untar(fetchPackage(platformPackage, RUNTIME.node, downloads), tmp, ['package/bin/node', 'package/LICENSE']);
    untar(fetchPackage('npm', RUNTIME.npm, downloads), path.join(tmp, 'lib', 'node_modules', 'npm'), []);
    fs.symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(tmp, 'bin', 'npm'));
    fs.symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', path.join(tmp, 'bin', 'npx'));
    fs.rmSync(downloads, { recursive: true, force: true });
    const check = spawnSync(path.join(tmp, 'bin', 'node'), ['--version'], { encoding: 'utf8' });
    if ((check.stdout || '').trim() !== `v${RUNTIME.node}`) throw new Error(`the fetched Node does not run here (${check.stderr || check.error})`);
    try {
      fs.renameSync(tmp, dir);
    } catch (err) {
      // Another run finished first: its copy is as good as this one.
      if (!fs.existsSync(node)) throw err;
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return dir;
}

const nodeMajor = Number(process.versions.node.split('.')[0]);
if (nodeMajor < MIN_NODE_MAJOR) {
  if (process.env.TOLLGATE_NODE_RUNTIME) fail(`the runtime in ${process.env.TOLLGATE_NODE_RUNTIME} runs Node ${process.versions.node}`);
  let dir;
  try {
    dir = ensureRuntime();
  } catch (err) {
    fail(err.message);
  }
  const bin = path.join(dir, 'bin');
  // Its bin directory first on PATH: every child (npm install, tsx, jest, tsc, eslint, the stack's
  // processes) then runs on this Node, and npm on the pinned npm.
  const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`, TOLLGATE_NODE_RUNTIME: dir };
  // npm names the Node and npm it ran this script with; tools that read these (node-gyp) get the runtime's.
  const node = path.join(bin, 'node');
  if (env.NODE) env.NODE = node;
  if (env.npm_node_execpath) env.npm_node_execpath = node;
  if (env.npm_execpath) env.npm_execpath = path.join(dir, 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js');
  const child = spawn(node, [__filename, ...process.argv.slice(2)], { stdio: 'inherit', env });
  // Ctrl-C reaches the child through the shared process group; wait for it to finish cleanly.
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => child.kill('SIGTERM'));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
} else {
  main();
}

function depsStale() {
  const marker = path.join(root, 'node_modules', '.package-lock.json');
  if (!fs.existsSync(marker)) return true;
  return fs.statSync(path.join(root, 'package-lock.json')).mtimeMs > fs.statSync(marker).mtimeMs + 1000;
}

function main() {
  if (depsStale()) {
    // A registry hiccup (idle timeout, reset) should not fail a first start: up to three attempts.
    let status = 1;
    for (let attempt = 1; attempt <= 3 && status !== 0; attempt++) {
      if (attempt > 1) console.log(`[tollgate] npm install failed; attempt ${attempt} of 3…`);
      console.log(`[tollgate] installing dependencies (Node ${process.versions.node})…`);
      status = spawnSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' }).status ?? 1;
    }
    if (status !== 0) process.exit(status);
  }

  const bin = (name) => path.join(root, 'node_modules', '.bin', name);
  let child;
  if (mode === 'dev') {
    child = spawn(bin('tsx'), [path.join(root, 'scripts', 'dev.ts'), ...rest], { cwd: root, stdio: 'inherit' });
  } else if (mode === 'test') {
    let tsc = spawnSync(bin('tsc'), ['--noEmit', '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
    if (tsc.status === 0) tsc = spawnSync(bin('tsc'), ['--noEmit', '-p', 'dashboard/tsconfig.json'], { cwd: root, stdio: 'inherit' });
    if (tsc.status !== 0) {
      console.error('[tollgate] type check failed');
      process.exit(tsc.status ?? 1);
    }
    const lint = spawnSync(bin('eslint'), ['.'], { cwd: root, stdio: 'inherit' });
    if (lint.status !== 0) {
      console.error('[tollgate] lint failed (npm run lint)');
      process.exit(lint.status ?? 1);
    }
    child = spawn(bin('jest'), rest, { cwd: root, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } });
  } else if (mode === 'tsx' && rest.length > 0) {
    // `npm run cli`, `npm run migrate`, `npm run emulator`: a TypeScript entry point on the same
    // runtime. npm runs scripts from the repository root; the caller's directory is in INIT_CWD.
    child = spawn(bin('tsx'), rest, { cwd: root, stdio: 'inherit' });
  } else {
    console.error('usage: node scripts/run.cjs dev|test [jest args]|tsx <file.ts> [args]');
    process.exit(64);
  }
  // Ctrl-C reaches the child through the shared process group; wait for it to finish cleanly.
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => child.kill('SIGTERM'));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
