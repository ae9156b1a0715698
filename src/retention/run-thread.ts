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
 * The thread lowers its nice value before it loads anything, then loads run-thread-worker
 * (src/worker-thread.ts).
 */
import { startWorker } from '../worker-thread';
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

export function retainProjectsInThread(
  config: RetentionDeps['config'],
  o: { opts: RetentionOptions; nice: number },
): Promise<{ projects: ProjectRetention[]; scopeMs: number }> {
  const { onStep, ...opts } = o.opts;
  const workerData: RetentionThreadData = {
    config: { env: config.env, masterKey: config.masterKey, databaseUrl: config.databaseUrl, retention: config.retention, archiveStore: config.archiveStore },
    opts,
  };
  const worker = startWorker(__dirname, 'run-thread-worker', { workerData, nice: o.nice });
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
