/**
 * Following projects' event logs for SSE subscribers (GET /v1/governance/events/stream).
 *
 * One follower per API process: while it has subscribers it polls the chain heads of the projects
 * they watch (one statement, one index probe per project, every `pollMs`) and wakes the
 * subscribers of a project whose head moved. Subscribers then read their own events from
 * PostgreSQL by chain position, so an event written by any process (API, worker, another replica)
 * reaches every stream, in chain order, once. Chain order is commit order (the sequencer assigns
 * positions under a per-project lock), so reading "positions after N" never skips an event that
 * commits late.
 */
import type { Db } from '../db/pool';
import { chainHeads } from '../db/repositories/integrity-log';
import type { Logger } from '../logger';

export interface EventFollower {
  /** Resolves when the project's chain head is above `afterPos`, or after `timeoutMs` (false). */
  waitBeyond(projectId: string, afterPos: number, timeoutMs: number, signal?: AbortSignal): Promise<boolean>;
  close(): void;
}

interface Waiter {
  afterPos: number;
  resolve: (moved: boolean) => void;
}

export function createEventFollower(deps: { db: Db; logger: Logger; pollMs?: number }): EventFollower {
  const pollMs = deps.pollMs ?? 250;
  const waiters = new Map<string, Set<Waiter>>();
  let timer: NodeJS.Timeout | null = null;
  let polling = false;

  async function poll(): Promise<void> {
    if (polling || waiters.size === 0) return;
    polling = true;
    try {
      const heads = await chainHeads(deps.db, [...waiters.keys()]);
      for (const [projectId, set] of waiters) {
        const head = heads.get(projectId) ?? 0;
        for (const w of [...set]) {
          if (head > w.afterPos) {
            set.delete(w);
            w.resolve(true);
          }
        }
        if (set.size === 0) waiters.delete(projectId);
      }
    } catch (err) {
      deps.logger.warn({ err }, 'event stream poll failed; retried');
    } finally {
      polling = false;
      if (waiters.size === 0 && timer) {
        clearInterval(timer);
        timer = null;
      }
    }
  }

  return {
    waitBeyond(projectId, afterPos, timeoutMs, signal) {
      return new Promise<boolean>((resolve) => {
        let set = waiters.get(projectId);
        if (!set) waiters.set(projectId, (set = new Set()));
        const done = (moved: boolean) => {
          clearTimeout(t);
          signal?.removeEventListener('abort', onAbort);
          waiters.get(projectId)?.delete(w);
          if (waiters.get(projectId)?.size === 0) waiters.delete(projectId);
          resolve(moved);
        };
        const w: Waiter = { afterPos, resolve: done };
        const t = setTimeout(() => done(false), timeoutMs);
        const onAbort = () => done(false);
        signal?.addEventListener('abort', onAbort);
        set.add(w);
        if (!timer) {
          timer = setInterval(() => void poll(), pollMs);
          timer.unref?.();
        }
      });
    },
    close() {
      if (timer) clearInterval(timer);
      timer = null;
      for (const set of waiters.values()) for (const w of set) w.resolve(false);
      waiters.clear();
    },
  };
}
