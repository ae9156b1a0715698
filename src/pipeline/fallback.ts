/**
 * The one fallback engine of every governed call (executions, execute, the five proxies, jobs):
 * tries the primary target, then the explicit fallback chain while the failure says the target is
 * unavailable, and keeps the attempt records and timeline events of each try. What an attempt
 * does (a normalized dispatch, a native pass-through, a translated call) is the caller's.
 */
import type { Clock } from '../clock';
import type { NewEvent } from '../events/types';
import { executionEvents } from '../executions/record';
import type { Target } from '../executions/types';
import type { AttemptRecord, ExecutionInput } from '../executions/types';
import type { ProviderFailure } from '../providers/types';

/** Failures after which the primary counts as unavailable and the next target is tried. */
export function triggersFallback(f: Pick<ProviderFailure, 'kind' | 'retryable' | 'status'>): boolean {
  if (f.kind === 'aborted') return false;
  return f.retryable || f.kind === 'rate_limited' || f.kind === 'overloaded' || f.kind === 'timeout' || f.kind === 'network' || (f.status !== null && f.status >= 500);
}

export interface AttemptOutcome {
  ok: boolean;
  failure?: ProviderFailure;
  /** No other target may be tried: output already reached the caller, or the caller went away. */
  final?: boolean;
}

export interface FallbackRun<A extends AttemptOutcome> {
  last: A;
  target: Target;
  attempts: AttemptRecord[];
  fallbackOccurred: boolean;
  /** Events of the tries after the first (and of each failed try that led to another), in order. */
  events: NewEvent[];
}

type EventInput = Pick<ExecutionInput, 'projectId' | 'permitId' | 'executionId'>;

export async function dispatchWithFallback<A extends AttemptOutcome>(
  input: EventInput,
  targets: Target[],
  attempt: (target: Target, index: number) => Promise<A>,
  opts: { clock: Clock; stream: boolean; signal?: AbortSignal },
): Promise<FallbackRun<A>> {
  const ev = executionEvents(input);
  const attempts: AttemptRecord[] = [];
  const events: NewEvent[] = [];
  let previous: { target: Target; failure: ProviderFailure } | null = null;
  for (let i = 0; i < targets.length; i++) {
    const target = targets[i];
    const sent = opts.clock.now();
    if (previous) {
      events.push(ev('fallback.triggered', sent, previous.target, {
        failure_kind: previous.failure.kind, status: previous.failure.status ?? null, next_provider: target.provider, next_model: target.model,
      }));
      events.push(ev('fallback.selected_model', sent, target, { position: i }));
      events.push(ev('provider.request_sent', sent, target, { attempt: i + 1, stream: opts.stream }));
    }
    const a = await attempt(target, i);
    const received = opts.clock.now();
    attempts.push({
      provider: target.provider, model: target.model, sentAt: sent.toISOString(), receivedAt: received.toISOString(), ok: a.ok,
      status: a.ok ? 200 : a.failure?.status ?? null, ...(a.failure ? { failureKind: a.failure.kind } : {}),
    });
    const more = !a.ok && !a.final && i + 1 < targets.length && !opts.signal?.aborted && triggersFallback(a.failure!);
    if (!more) return { last: a, target, attempts, fallbackOccurred: i > 0, events };
    events.push(ev('provider.response_received', received, target, {
      ok: false, status: a.failure!.status, failure_kind: a.failure!.kind, attempt: i + 1,
    }));
    previous = { target, failure: a.failure! };
  }
  throw new Error('dispatchWithFallback: no target');
}
