/**
 * A provider call's abort signal: the caller's signal (client gone) combined with a total deadline.
 *
 * Not `AbortSignal.any([caller, AbortSignal.timeout(ms)])`: that timer cannot be cleared, so every
 * call kept its signals reachable for the whole deadline (120 s by default) after it finished. On
 * Node 20, 100,000 such pairs kept 320 MiB after a full collection and cost 21 µs each; this costs
 * 6 µs and nothing once released (docs/decisions/provider-adapters.md).
 */
export interface Deadline {
  signal: AbortSignal;
  /** Whether the deadline (not the caller) aborted the call. */
  timedOut(): boolean;
  /** Clears the timer and the caller listener; call when the response body is consumed or the call failed. */
  release(): void;
}

export function deadline(ms: number, caller?: AbortSignal): Deadline {
  const controller = new AbortController();
  let timedOut = false;
  let released = false;
  const onCallerAbort = () => controller.abort(caller!.reason);
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException(`the provider did not answer within ${ms} ms`, 'TimeoutError'));
  }, ms);
  timer.unref?.();
  if (caller?.aborted) controller.abort(caller.reason);
  else caller?.addEventListener('abort', onCallerAbort, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    release() {
      if (released) return;
      released = true;
      clearTimeout(timer);
      caller?.removeEventListener('abort', onCallerAbort);
    },
  };
}

/** Releases `d` when a response body stream closes (consumed, dumped or destroyed). */
export function releaseWithBody(d: Deadline, body: { once(event: 'close', listener: () => void): unknown }): void {
  body.once('close', () => d.release());
}
