/**
 * A round run every `intervalMs` in the background, never two at once: `runOnce` starts a round
 * (or joins the one running) and resolves with its result; a failed round is logged and retried
 * next interval. Used by the event-chain sequencer and the webhook fan-out.
 */
import type { Logger } from '../logger';

export interface PeriodicRound {
  runOnce(): Promise<number>;
  close(): Promise<void>;
}

export function startPeriodicRound(round: () => Promise<number>, opts: { intervalMs: number; logger: Logger; failureMessage: string }): PeriodicRound {
  let running: Promise<number> | null = null;
  let closed = false;

  const runOnce = (): Promise<number> => {
    if (!running) {
      running = round().finally(() => {
        running = null;
      });
    }
    return running;
  };

  const timer = setInterval(() => {
    if (closed || running) return;
    runOnce().catch((err) => opts.logger.warn({ err }, opts.failureMessage));
  }, opts.intervalMs);
  timer.unref?.();

  return {
    runOnce,
    async close() {
      closed = true;
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
