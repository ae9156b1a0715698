#!/usr/bin/env node
// Entry point of `npm run dev` and `npm test`. Plain Node with no dependencies, because its first
// job is to install them when node_modules is missing or older than package-lock.json. It uses
// `npm install` (which follows the committed lock file) rather than `npm ci`: npm 11 writes lock
// files without other platforms' optional packages (@swc/core-*) and then refuses them in `npm ci`.
'use strict';
const { spawnSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const mode = process.argv[2];
const rest = process.argv.slice(3);

function depsStale() {
  const marker = path.join(root, 'node_modules', '.package-lock.json');
  if (!fs.existsSync(marker)) return true;
  return fs.statSync(path.join(root, 'package-lock.json')).mtimeMs > fs.statSync(marker).mtimeMs + 1000;
}

if (depsStale()) {
  // A registry hiccup (idle timeout, reset) should not fail a first start: up to three attempts.
  let status = 1;
  for (let attempt = 1; attempt <= 3 && status !== 0; attempt++) {
    if (attempt > 1) console.log(`[tollgate] npm install failed; attempt ${attempt} of 3…`);
    console.log('[tollgate] installing dependencies…');
    status = spawnSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' }).status ?? 1;
  }
  if (status !== 0) process.exit(status);
}

const tsx = path.join(root, 'node_modules', '.bin', 'tsx');
const jest = path.join(root, 'node_modules', '.bin', 'jest');
let child;
if (mode === 'dev') {
  child = spawn(tsx, [path.join(root, 'scripts', 'dev.ts'), ...rest], { cwd: root, stdio: 'inherit' });
} else if (mode === 'test') {
  const tscBin = path.join(root, 'node_modules', '.bin', 'tsc');
  let tsc = spawnSync(tscBin, ['--noEmit', '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
  if (tsc.status === 0) tsc = spawnSync(tscBin, ['--noEmit', '-p', 'dashboard/tsconfig.json'], { cwd: root, stdio: 'inherit' });
  if (tsc.status !== 0) {
    console.error('[tollgate] type check failed');
    process.exit(tsc.status ?? 1);
  }
  const lint = spawnSync(path.join(root, 'node_modules', '.bin', 'eslint'), ['.'], { cwd: root, stdio: 'inherit' });
  if (lint.status !== 0) {
    console.error('[tollgate] lint failed (npm run lint)');
    process.exit(lint.status ?? 1);
  }
  child = spawn(jest, rest, { cwd: root, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } });
} else {
  console.error('usage: node scripts/run.cjs dev|test');
  process.exit(64);
}
// Ctrl-C reaches the child through the shared process group; wait for it to finish cleanly.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => child.kill('SIGTERM'));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
