/**
 * Child processes and teardown for the benches: every child is tracked from spawn to exit, a
 * teardown runs once (normal end, error, SIGINT/SIGTERM), and whatever is still alive when this
 * process exits is SIGKILLed, so a bench never leaves a server behind.
 */
import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';

export interface Child {
  name: string;
  proc: ChildProcess;
  pid: number;
  /** Last ~8 kB of the child's stdout (unless written to a file) + stderr. */
  tail(): string;
  exited(): boolean;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the child has exited. */
  stop(graceMs?: number): Promise<void>;
}

const live = new Set<ChildProcess>();
let exitGuard = false;

function guardExit(): void {
  if (exitGuard) return;
  exitGuard = true;
  process.on('exit', () => {
    for (const p of live) {
      try {
        p.kill('SIGKILL');
      } catch {
        /* already gone */
      }
    }
  });
}

/** Tracks a child spawned elsewhere (e.g. the Temporal dev server) so it is killed on exit. */
export function track(proc: ChildProcess): void {
  guardExit();
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  live.add(proc);
  proc.once('exit', () => live.delete(proc));
}

export function spawnChild(
  name: string,
  command: string,
  args: string[],
  opts: {
    cwd: string;
    env?: NodeJS.ProcessEnv;
    echoStderr?: boolean;
    /** Appends the child's stdout to this file directly (as `npm run dev` writes its logs) instead of draining it here. */
    stdoutFile?: string;
  },
): Child {
  const stdoutFd = opts.stdoutFile ? fs.openSync(opts.stdoutFile, 'a') : null;
  const proc = spawn(command, args, { cwd: opts.cwd, env: { ...process.env, ...opts.env }, stdio: ['ignore', stdoutFd ?? 'pipe', 'pipe'] });
  if (stdoutFd !== null) fs.closeSync(stdoutFd);
  if (proc.pid === undefined) throw new Error(`${name}: spawn ${command} failed`);
  track(proc);
  let out = '';
  let done = false;
  proc.once('exit', () => {
    done = true;
  });
  // Always drain both pipes: a child blocked on a full pipe would distort the measurement.
  const capture = (d: Buffer) => {
    out = (out + d.toString()).slice(-8000);
  };
  proc.stdout?.on('data', capture);
  proc.stderr!.on('data', (d: Buffer) => {
    capture(d);
    if (opts.echoStderr) process.stderr.write(d);
  });
  return {
    name,
    proc,
    pid: proc.pid,
    tail: () => (opts.stdoutFile ? fileTail(opts.stdoutFile) : '') + out,
    exited: () => done,
    stop: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        if (done) return resolve();
        const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
        proc.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        proc.kill('SIGTERM');
      }),
  };
}

/** The last ~8 kB of a file (a child's log written there), or nothing if it is gone. */
function fileTail(file: string): string {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const buf = Buffer.alloc(Math.min(8000, size));
      fs.readSync(fd, buf, 0, buf.length, size - buf.length);
      return buf.toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}

/** Polls `url` until it answers below 500; fails early, with the child's output, if it exits. */
export async function waitReady(child: Child, url: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exited()) throw new Error(`${child.name} exited before it was ready:\n${child.tail().slice(-3000)}`);
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await r.arrayBuffer();
      if (r.status < 500) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`${child.name} did not answer on ${url} within ${timeoutMs} ms:\n${child.tail().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Teardown steps run once, last added first, each bounded in time. `onSignals()` makes SIGINT and
 * SIGTERM run it and exit 130 (a second signal exits at once; the exit guard kills the children).
 */
export class Teardown {
  private readonly steps: { name: string; fn: () => Promise<unknown> }[] = [];
  private running: Promise<void> | null = null;

  add(name: string, fn: () => Promise<unknown>): void {
    this.steps.push({ name, fn });
  }

  run(stepTimeoutMs = 20_000): Promise<void> {
    this.running ??= (async () => {
      for (const { name, fn } of [...this.steps].reverse()) {
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            fn(),
            new Promise((_, reject) => {
              timer = setTimeout(() => reject(new Error('timed out')), stepTimeoutMs);
            }),
          ]);
        } catch (err) {
          process.stderr.write(`teardown ${name}: ${err instanceof Error ? err.message : String(err)}\n`);
        } finally {
          clearTimeout(timer);
        }
      }
    })();
    return this.running;
  }

  onSignals(): void {
    guardExit();
    let signalled = false;
    const handler = (signal: NodeJS.Signals) => {
      if (signalled) process.exit(130);
      signalled = true;
      process.stderr.write(`\n${signal}: stopping every child…\n`);
      void this.run().finally(() => process.exit(130));
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  }
}
