/**
 * A server binary started as a child process and waited for until it accepts connections on its
 * port: the Temporal dev server, the S3-compatible test server and the OpenTelemetry Collector.
 * Its last output is kept for the error when it exits early or never listens.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';

export interface ListeningProcess {
  process: ChildProcess;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it exited. */
  stop(): Promise<void>;
}

export async function startListening(opts: {
  /** What the errors call it. */
  name: string;
  bin: string;
  args: string[];
  port: number;
  env?: NodeJS.ProcessEnv;
  logFile?: NodeJS.WritableStream;
  timeoutMs: number;
  pollMs: number;
}): Promise<ListeningProcess> {
  const child = spawn(opts.bin, opts.args, { stdio: ['ignore', 'pipe', 'pipe'], ...(opts.env ? { env: opts.env } : {}) });
  let output = '';
  const capture = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8000);
    opts.logFile?.write(chunk);
  };
  child.stdout!.on('data', capture);
  child.stderr!.on('data', capture);
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const deadline = Date.now() + opts.timeoutMs;
  while (!(await portOpen(opts.port))) {
    if (exited) throw new Error(`${opts.name} exited early:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${opts.name} did not open port ${opts.port} within ${opts.timeoutMs / 1000}s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, opts.pollMs));
  }
  return {
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (exited) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
      }),
  };
}

/** Whether something accepts connections on the port. */
export function portOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
