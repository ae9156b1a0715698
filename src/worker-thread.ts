/**
 * A worker thread running one of Tollgate's modules (the firewall's, the leaf checks', retention's
 * thread and its row parts'): from source (tsx, jest) it registers tsx and loads `<name>.ts`, from
 * the compiled build `<name>.js`, from the caller's directory.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * The thread's code. With `nice`, it lowers its nice value first, before it loads anything: loading
 * an entry loads its whole module tree, a burst of CPU, which ran at the caller's priority when the
 * entry lowered its own once loaded. Threads it starts inherit the value.
 */
export function workerSource(entry: string, nice?: number): string {
  if (nice !== undefined && (!Number.isInteger(nice) || nice < 0 || nice > 19)) throw new RangeError(`a nice value is an integer in 0–19, not ${nice}`);
  // On Linux a nice value is the calling thread's own: pid 0 here is the new thread.
  const lower = nice !== undefined && process.platform === 'linux' ? `require('node:os').setPriority(0, ${nice});` : '';
  const register = entry.endsWith('.ts') ? `require(${JSON.stringify(require.resolve('tsx/cjs/api'))}).register();` : '';
  return `${lower} ${register} require(${JSON.stringify(entry)});`;
}

/** Starts the worker `name` of `dir` (the caller's `__dirname`), built as this file is. */
export function startWorker(dir: string, name: string, o: { workerData?: unknown; nice?: number } = {}): Worker {
  const entry = path.join(dir, `${name}${path.extname(__filename)}`);
  return new Worker(workerSource(entry, o.nice), { eval: true, workerData: o.workerData });
}
