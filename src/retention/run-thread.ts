/**
 * Each project's step of a retention run (src/retention/run.ts `retainProjects`: archives written,
 * read back, rows deleted) in a worker thread whose nice value is RETENTION_NICE, on connections
 * of its own. That work is almost all CPU (rows written out canonically, hashed, read back and
 * hashed again); at the caller's priority it took the cores from the calls beside it, and their
 * latency rose for as long as an archive was written. At a lower priority it takes what the calls
 * leave. Linux keeps a nice value per thread, so only this thread (and any thread it starts)
 * runs lower; elsewhere the thread runs at the caller's priority.
 *
 * Each step waits for the caller's step callback, as in the caller's thread: what the callback
 * throws stops the run there (a test's simulated crash) and is what the run rejects with.
 *
 * The thread lowers its nice value before it loads anything (`threadSource`). From source (tsx,
 * jest) it then registers tsx and loads run-thread-worker.ts; from the compiled build it loads
 * run-thread-worker.js next to this file.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { ArchiveVerificationError } from './archive';
import type { ProjectRetention, RetentionDeps, RetentionOptions } from './types';

export interface RetentionThreadData {
  config: RetentionDeps['config'];
  opts: Omit<RetentionOptions, 'onStep'>;
}

export type RetentionStep = Parameters<NonNullable<RetentionOptions['onStep']>>[0];

/** What the thread says: a step (answered with `StepReply`), its result, or its failure. */
export type ThreadMessage =
  | { stepId: number; step: RetentionStep; archiveId: string }
  | { done: { projects: ProjectRetention[]; scopeMs: number } }
  | { error: string; name: string };

export interface StepReply {
  stepId: number;
  error?: { message: string; name: string };
}

/** Errors whose class a caller tells apart, rebuilt by name on this side of the thread. */
const ERROR_CLASSES: Record<string, new (message: string) => Error> = { ArchiveVerificationError };

const rebuild = (e: { message: string; name: string }) => new (ERROR_CLASSES[e.name] ?? Error)(e.message);

/**
 * The thread's code: its nice value first, then its entry (through tsx from source). Loading the
 * entry loads the whole retention path (the export writer, the verifier, the database layer), a
 * burst of CPU; lowered only once the entry ran, that load took the cores from the calls beside it
 * at the caller's priority. Threads it starts (the row parts' worker, the leaf checks') inherit the value.
 */
export function threadSource(entry: string, nice: number): string {
  if (!Number.isInteger(nice) || nice < 0 || nice > 19) throw new RangeError(`a nice value is an integer in 0–19, not ${nice}`);
  // On Linux a nice value is the calling thread's own: pid 0 here is the new thread.
  const lower = process.platform === 'linux' ? `require('node:os').setPriority(0, ${nice});` : '';
  const register = entry.endsWith('.ts') ? `require(${JSON.stringify(require.resolve('tsx/cjs/api'))}).register();` : '';
  return `${lower} ${register} require(${JSON.stringify(entry)});`;
}

export function retainProjectsInThread(
  config: RetentionDeps['config'],
  o: { opts: RetentionOptions; nice: number },
): Promise<{ projects: ProjectRetention[]; scopeMs: number }> {
  const { onStep, ...opts } = o.opts;
  const workerData: RetentionThreadData = {
    config: { env: config.env, masterKey: config.masterKey, databaseUrl: config.databaseUrl, retention: config.retention, archiveStore: config.archiveStore },
    opts,
  };
  const entry = path.join(__dirname, `run-thread-worker${path.extname(__filename)}`);
  const worker = new Worker(threadSource(entry, o.nice), { eval: true, workerData });
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (err: Error | null, out?: { projects: ProjectRetention[]; scopeMs: number }) => {
      if (settled) return;
      settled = true;
      void worker.terminate();
      if (err) reject(err);
      else resolve(out!);
    };
    worker.on('message', (msg: ThreadMessage) => {
      if ('step' in msg) {
        Promise.resolve()
          .then(() => onStep?.(msg.step, msg.archiveId))
          .then(
            () => worker.postMessage({ stepId: msg.stepId } satisfies StepReply),
            (err: Error) => worker.postMessage({ stepId: msg.stepId, error: { message: String(err?.message ?? err), name: String(err?.name ?? 'Error') } } satisfies StepReply),
          );
      } else if ('done' in msg) settle(null, msg.done);
      else settle(rebuild({ message: msg.error, name: msg.name }));
    });
    worker.on('error', (err) => settle(err));
    worker.on('exit', (code) => settle(new Error(`retention thread exited (${code}) before its run finished`)));
  });
}
