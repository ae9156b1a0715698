/**
 * Activities of the executionWorkflow: governance (local), provider dispatch (normal activity, no
 * automatic retry: a provider call is not idempotent), and recording (local). Built from their
 * dependencies so tests can hand in real or fake parts.
 *
 * Recording is idempotent per execution id: the `executions` insert and the completion events
 * commit in one transaction, and only the transaction that inserted the row appends events; spend
 * settlement/release is idempotent in governance itself. A retried recording (worker died after
 * commit) records nothing twice and returns the stored envelope.
 */
import { Context } from '@temporalio/activity';
import type { ProviderId } from '../src/config';
import { appendEvents, NewEvent } from '../src/db/repositories/events';
import { findExecutionById } from '../src/db/repositories/executions';
import type { ExecutionEnvelope } from '../src/executions/envelope';
import { executionEvent, normalizedRequest, recordExecution } from '../src/executions/record';
import { recordReservationDenial } from '../src/executions/reservation-denial';
import type { Target } from '../src/executions/routing';
import type { RelayPublisher, StreamRelay } from '../src/executions/stream-relay';
import type { AttemptRecord, DispatchOutcome, DispatchResult, ExecutionInput, GovernOutcome, RecordInput } from '../src/executions/types';
import type { Governance } from '../src/governance';
import type { PricingCatalog } from '../src/pricing/types';
import { estimatedUsage, requestTexts } from '../src/providers/shared/usage';
import { NormalizedRequest, ProviderError, ProviderFailure, ProviderGateway, ProviderResult, Usage } from '../src/providers/types';
import type { ActivityDeps } from './deps';

/** Re-exported for existing importers; lives in src/executions/record.ts. */
export { normalizedRequest };

export interface ExecutionDeps {
  providers: ProviderGateway;
  pricing: PricingCatalog;
  governance: Governance;
  relay: StreamRelay;
}

/** Failures after which the primary counts as unavailable and the explicit fallback chain is tried. */
function triggersFallback(f: ProviderFailure): boolean {
  if (f.kind === 'aborted') return false;
  return f.retryable || f.kind === 'rate_limited' || f.kind === 'overloaded' || f.kind === 'timeout' || f.kind === 'network' || (f.status !== null && f.status >= 500);
}

export function createExecutionActivities(deps: Pick<ActivityDeps, 'db' | 'clock' | 'logger'> & Partial<ExecutionDeps>) {
  const { db, clock, logger } = deps;
  const need = <K extends keyof ExecutionDeps>(k: K): ExecutionDeps[K] => {
    const v = deps[k];
    if (!v) throw new Error(`execution activities need "${k}" in ActivityDeps`);
    return v as ExecutionDeps[K];
  };

  const ev = executionEvent;

  const recordDeps = () => ({ db, clock, pricing: need('pricing'), governance: need('governance') });

  const activities = {
    /** Policy, budget, rate and firewall checks; writes the permit (idempotent per permit id). */
    async executionGovern(input: ExecutionInput): Promise<GovernOutcome> {
      const pricing = need('pricing');
      const req = normalizedRequest(input, input.routing.primary);
      if (input.reservationDenied) return recordReservationDenial({ db, clock }, input, req);
      const est = pricing.estimate(req);
      const d = await need('governance').evaluate(
        {
          projectId: input.projectId,
          requestId: input.executionId,
          route: input.route,
          operation: req.operation,
          provider: req.provider,
          model: req.model,
          estimatedInputTokens: est.input_tokens,
          estimatedOutputTokens: est.output_tokens,
          estimatedCostMicros: est.cost_micros,
          workflowId: input.workflowIntentId,
          inspectableText: requestTexts(req),
        },
        { persist: true, permitId: input.permitId, permitMetadata: { execution_id: input.executionId, mode: input.mode } },
      );
      const out: GovernOutcome = { decision: d.decision, reason_code: d.reason_code, display_reason: d.display_reason, actions: d.actions };
      if (d.retry_after_seconds !== undefined) out.retry_after_seconds = d.retry_after_seconds;
      return out;
    },

    /**
     * The provider call (`dispatch` below) and, when handed the governance outcome, its recording.
     */
    async executionDispatch(input: ExecutionInput, gov?: GovernOutcome): Promise<DispatchResult> {
      const outcome = await dispatch(input);
      if (!gov) return outcome;
      // Recording here spares the workflow a local activity after the call. It is idempotent (the
      // executions row), so a worker that dies after this commit is still recorded once: the
      // workflow's interrupted path finds the row. A failed recording is left to the workflow's
      // local activity, which retries it, so a provider result is never lost to a database hiccup.
      try {
        return { ...outcome, recorded: await recordExecution(recordDeps(), input, { kind: 'dispatched', gov, outcome }) };
      } catch (err) {
        logger.warn({ err, executionId: input.executionId }, 'recording in the dispatch activity failed; the workflow records');
        return outcome;
      }
    },

    /**
     * Builds the envelope, settles or releases spend, and persists the execution row and its
     * completion events once. Safe to retry.
     */
    async executionRecord(input: ExecutionInput, rec: RecordInput): Promise<ExecutionEnvelope> {
      if (Context.current().info.attempt > 1) {
        const existing = await findExecutionById(db, input.executionId);
        if (existing) return existing.envelope;
      }
      return recordExecution(recordDeps(), input, rec);
    },
  };

  /**
   * One provider dispatch, then the explicit fallback chain if the primary is unavailable. Writes
   * routing/execution events before each call (so a call whose worker died is still on the
   * timeline), heartbeats while waiting, relays stream deltas, and never throws for a provider
   * failure: the outcome is data for the recording step.
   */
  async function dispatch(input: ExecutionInput): Promise<DispatchOutcome> {
    const providers = need('providers');
    const ctx = Context.current();
    const targets = [input.routing.primary, ...input.routing.fallback];
    const attempts: AttemptRecord[] = [];
    const abort = new AbortController();
    const signal = AbortSignal.any([abort.signal, ctx.cancellationSignal]);
    let clientGone: string | null = null;
    let publisher: RelayPublisher | null = null;
    let unsubscribe: (() => Promise<void>) | null = null;
    const heartbeat = setInterval(() => ctx.heartbeat(), Math.max(200, Math.floor(input.heartbeatTimeoutMs / 3)));
    heartbeat.unref?.();
    if (input.relay) {
      const relay = need('relay');
      publisher = relay.publisher(input.relay.stream);
      unsubscribe = await relay.subscribe(input.relay.control, (m) => {
        if (m.type === 'abort') {
          clientGone = m.reason;
          abort.abort();
        }
      });
    }
    let deltas = 0;
    let streamed = '';
    let pendingEvents: NewEvent[] = [];
    try {
      let lastFailure: { failure: ProviderFailure; partial: Usage | null } | null = null;
      for (let i = 0; i < targets.length; i++) {
        const target = targets[i];
        const req = normalizedRequest(input, target);
        const now = clock.now();
        if (i === 0) {
          pendingEvents.push(ev(input, 'routing.selected_model', 'routing', now, target, { reason_code: input.routing.reason_code, requested_provider: input.routing.requested_provider, requested_model: input.routing.requested_model }));
          pendingEvents.push(ev(input, 'execution.started', 'execution', now, target, { operation: req.operation, mode: input.mode }));
        } else {
          pendingEvents.push(ev(input, 'fallback.triggered', 'routing', now, targets[i - 1], { failure_kind: lastFailure?.failure.kind, status: lastFailure?.failure.status ?? null, next_provider: target.provider, next_model: target.model }));
          pendingEvents.push(ev(input, 'fallback.selected_model', 'routing', now, target, { position: i }));
        }
        pendingEvents.push(ev(input, 'provider.request_sent', 'execution', now, target, { attempt: i + 1, stream: req.stream }));
        await appendEvents(db, pendingEvents);
        pendingEvents = [];
        const sentAt = now.toISOString();
        try {
          const result: ProviderResult = await providers.dispatch(req, {
            signal,
            onDelta: publisher
              ? (text) => {
                  deltas += 1;
                  streamed += text;
                  publisher!.send({ type: 'delta', text });
                }
              : undefined,
          });
          attempts.push({ provider: target.provider, model: target.model, sentAt, receivedAt: clock.now().toISOString(), ok: true, status: 200 });
          return { ok: true, target, result, attempts, fallbackOccurred: i > 0 };
        } catch (err) {
          const receivedAt = clock.now();
          const failure: ProviderFailure =
            err instanceof ProviderError
              ? err.failure
              : { kind: signal.aborted ? 'aborted' : 'network', status: null, retryable: false, message: err instanceof Error ? err.message : String(err) };
          let partial: Usage | null = err instanceof ProviderError ? err.partialUsage ?? null : null;
          if (clientGone !== null) {
            // The client went away mid-stream: usage is what was produced up to the abort, estimated.
            partial = partial ?? estimatedUsage(req, streamed);
            partial = { ...partial, estimated: true };
          }
          attempts.push({ provider: target.provider, model: target.model, sentAt, receivedAt: receivedAt.toISOString(), ok: false, status: failure.status, failureKind: failure.kind });
          lastFailure = { failure, partial };
          const more = i + 1 < targets.length && clientGone === null && !ctx.cancellationSignal.aborted && triggersFallback(failure);
          if (more) {
            pendingEvents.push(ev(input, 'provider.response_received', 'execution', receivedAt, target, { ok: false, status: failure.status, failure_kind: failure.kind, attempt: i + 1 }));
            continue;
          }
          const { native: _native, ...plain } = failure;
          return {
            ok: false,
            kind: clientGone !== null ? 'aborted' : 'provider',
            target,
            failure: clientGone !== null ? { ...plain, kind: 'aborted', message: `client disconnected: ${clientGone}` } : plain,
            partialUsage: partial,
            attempts,
            fallbackOccurred: i > 0,
          };
        }
      }
      throw new Error('unreachable: no dispatch target');
    } finally {
      clearInterval(heartbeat);
      if (publisher) {
        publisher.send({ type: 'end', deltas });
        await publisher.flush();
        await publisher.close();
      }
      if (unsubscribe) await unsubscribe().catch(() => undefined);
      if (pendingEvents.length) await appendEvents(db, pendingEvents).catch((err) => logger.warn({ err }, 'could not append dispatch events'));
    }
  }

  return activities;
}

export type ExecutionActivities = ReturnType<typeof createExecutionActivities>;
export type { ProviderId };
