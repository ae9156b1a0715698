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
import { withTransaction } from '../src/db/pool';
import { appendEvents, NewEvent } from '../src/db/repositories/events';
import { findExecutionById, insertExecutionOnce } from '../src/db/repositories/executions';
import { findPermit, insertPermit } from '../src/db/repositories/permits';
import { buildEnvelope, ExecutionEnvelope, ExecutionStatus } from '../src/executions/envelope';
import type { Target } from '../src/executions/routing';
import type { RelayPublisher, StreamRelay } from '../src/executions/stream-relay';
import type { AttemptRecord, DispatchOutcome, ExecutionInput, GovernOutcome, RecordInput } from '../src/executions/types';
import type { Governance } from '../src/governance';
import type { PricingCatalog } from '../src/pricing/types';
import { estimatedUsage, requestTexts } from '../src/providers/shared/usage';
import { NormalizedRequest, ProviderError, ProviderFailure, ProviderGateway, ProviderResult, Usage } from '../src/providers/types';
import type { ActivityDeps } from './deps';

export interface ExecutionDeps {
  providers: ProviderGateway;
  pricing: PricingCatalog;
  governance: Governance;
  relay: StreamRelay;
}

const SOURCE = 'execution_events';

export function normalizedRequest(input: ExecutionInput, target: Target): NormalizedRequest {
  const r = input.request;
  const req: NormalizedRequest = {
    operation: r.operation,
    provider: target.provider,
    model: target.model,
    stream: input.mode === 'stream',
  };
  if (r.messages) req.messages = r.messages;
  if (r.inputs) req.inputs = r.inputs;
  if (r.parameters) req.parameters = r.parameters;
  const opts = r.providerOptions?.[target.provider];
  if (opts) req.providerOptions = opts;
  return req;
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

  function ev(input: ExecutionInput, eventType: string, phase: string, at: Date | string, t: Partial<Target> | null, metadata: Record<string, unknown> = {}): NewEvent {
    return {
      projectId: input.projectId,
      eventType,
      source: SOURCE,
      phase,
      provider: t?.provider ?? null,
      model: t?.model ?? null,
      permitId: input.permitId,
      requestId: input.executionId,
      metadata,
      timestamp: new Date(at),
    };
  }

  /** The workflow intent refused the call: record a deny permit (once) with the intent's reason code. */
  async function denyForReservation(input: ExecutionInput, req: NormalizedRequest): Promise<GovernOutcome> {
    const denial = input.reservationDenied!;
    const out: GovernOutcome = { decision: 'deny', reason_code: denial.reason_code, display_reason: denial.message, actions: [] };
    if (await findPermit(db, input.projectId, input.permitId)) return out;
    const now = clock.now();
    await withTransaction(db, async (tx) => {
      await insertPermit(tx, {
        id: input.permitId,
        project_id: input.projectId,
        request_id: input.executionId,
        route: input.route,
        operation: req.operation,
        provider: req.provider,
        model: req.model,
        workflow_id: input.workflowIntentId,
        decision: 'deny',
        reason_code: denial.reason_code,
        display_reason: denial.message,
        decision_details: {
          decision: 'deny',
          code: denial.reason_code,
          reason: denial.message,
          reason_detail: { category: 'workflow_intent', kind: 'call_reservation', outcome: 'denied' },
        },
        actions: [],
        issued_at: now,
        metadata: { execution_id: input.executionId },
      });
      await appendEvents(tx, [
        { ...ev(input, 'permit.denied', 'permit', now, req, { decision: 'deny', reason_code: denial.reason_code, reason: denial.message }), source: 'permits' },
      ]);
    });
    return out;
  }

  return {
    /** Policy, budget, rate and firewall checks; writes the permit (idempotent per permit id). */
    async executionGovern(input: ExecutionInput): Promise<GovernOutcome> {
      const pricing = need('pricing');
      const req = normalizedRequest(input, input.routing.primary);
      if (input.reservationDenied) return denyForReservation(input, req);
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
     * One provider dispatch, then the explicit fallback chain if the primary is unavailable. Writes
     * routing/execution events before each call (so a call whose worker died is still on the
     * timeline), heartbeats while waiting, relays stream deltas, and never throws for a provider
     * failure: the outcome is data for the recording step.
     */
    async executionDispatch(input: ExecutionInput): Promise<DispatchOutcome> {
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
      const pricing = need('pricing');
      const governance = need('governance');
      const completedAt = clock.now();
      const gov = rec.gov;
      const primary = input.routing.primary;
      let status: ExecutionStatus;
      let statusCode: number;
      let target: Target | null = primary;
      let usage: Usage | null = null;
      let cost: number | null = null;
      let result: ProviderResult | null = null;
      let error: { code: string; message: string } | null = null;
      let fallbackOccurred = false;
      const tail: NewEvent[] = [];

      if (rec.kind === 'governed_out') {
        status = 'denied';
        statusCode = gov.decision === 'throttle' ? 429 : 403;
        target = null;
        error = {
          code: gov.reason_code === 'prompt_firewall_blocked' ? 'prompt_firewall_blocked' : gov.decision === 'throttle' ? 'throttled' : 'denied',
          message: gov.display_reason,
        };
        tail.push(ev(input, 'request.denied', 'completion', completedAt, primary, { decision: gov.decision, reason_code: gov.reason_code, reason: gov.display_reason, status_code: statusCode }));
      } else if (rec.kind === 'interrupted') {
        // The dispatch activity never reported back (its worker died, or it timed out): the
        // provider may have received and billed the call, so it is not repeated. Usage is the
        // estimated input of the request when the call was sent (provider.request_sent persisted).
        status = 'failed';
        statusCode = 502;
        const sent = await db.query('SELECT 1 FROM events WHERE project_id = $1 AND request_id = $2 AND event_type = $3 LIMIT 1', [input.projectId, input.executionId, 'provider.request_sent']);
        if (sent.rowCount) {
          const est = estimatedUsage(normalizedRequest(input, primary), '');
          usage = { ...est, output_tokens: 0, total_tokens: est.input_tokens, metrics: est.metrics.filter((m) => m.meter !== 'output_tokens').concat([{ meter: 'output_tokens', quantity: 0, unit: 'tokens' }]), estimated: true };
          cost = pricing.costMicros(primary.provider, primary.model, usage);
        }
        error = { code: 'dispatch_interrupted', message: `The provider call did not report back (${rec.message}); its outcome is unknown and it was not repeated` };
        tail.push(ev(input, 'provider.response_received', 'execution', completedAt, primary, { ok: false, failure_kind: 'interrupted' }));
      } else {
        const o = rec.outcome;
        target = o.target;
        fallbackOccurred = o.fallbackOccurred;
        const last = o.attempts[o.attempts.length - 1];
        if (o.ok) {
          status = 'completed';
          statusCode = 200;
          result = o.result;
          usage = o.result.usage;
          cost = pricing.costMicros(o.target.provider, o.target.model, usage);
          tail.push(ev(input, 'provider.response_received', 'execution', last.receivedAt, o.target, { ok: true, status: 200, attempt: o.attempts.length, finish_reason: o.result.finish_reason ?? null }));
        } else {
          status = 'failed';
          statusCode = o.kind === 'aborted' ? 499 : 502;
          usage = o.partialUsage;
          cost = usage ? pricing.costMicros(o.target.provider, o.target.model, usage) : null;
          error = o.kind === 'aborted' ? { code: 'client_disconnected', message: o.failure.message } : { code: 'upstream_error', message: o.failure.message };
          tail.push(ev(input, 'provider.response_received', 'execution', last?.receivedAt ?? completedAt, o.target, { ok: false, status: o.failure.status, failure_kind: o.failure.kind, attempt: o.attempts.length }));
        }
      }

      const envelope = buildEnvelope({
        id: input.executionId,
        route: input.route,
        createdAt: input.createdAt,
        completedAt: completedAt.toISOString(),
        status,
        statusCode,
        output: result?.output ?? null,
        outputAssets: result?.output_assets ?? [],
        routing: {
          requested_provider: input.routing.requested_provider,
          requested_model: input.routing.requested_model,
          selected_provider: target?.provider ?? primary.provider,
          selected_model: target?.model ?? primary.model,
          reason_code: fallbackOccurred ? 'explicit_fallback' : input.routing.reason_code,
          fallback_occurred: fallbackOccurred,
        },
        governance: { decision: gov.decision === 'allow' ? 'allow' : 'deny', reason: gov.reason_code, actions: gov.actions, constraints: null, budgets: null },
        usage,
        costMicros: cost,
        error,
        resolved: input.resolved,
      });

      if (status !== 'denied') {
        tail.push(
          ev(input, 'usage.recorded', 'usage', completedAt, target, {
            input_tokens: envelope.usage.input_tokens,
            output_tokens: envelope.usage.output_tokens,
            total_tokens: envelope.usage.total_tokens,
            cost_usd_micros: envelope.usage.cost_usd_micros,
            estimated_final: envelope.usage.estimated_final,
          }),
        );
      }
      if (status === 'completed') tail.push(ev(input, 'request.completed', 'completion', completedAt, target, { status_code: statusCode }));
      else if (status === 'failed') tail.push(ev(input, 'request.errored', 'completion', completedAt, target, { status_code: statusCode, error_code: error?.code }));

      // Spend first (idempotent in governance), then the row + events in one transaction.
      if (gov.decision === 'allow') {
        if (status === 'completed' || (usage && (cost ?? 0) > 0)) {
          await governance.settle(input.permitId, { costMicros: cost ?? 0, inputTokens: usage?.input_tokens ?? 0, outputTokens: usage?.output_tokens ?? 0 });
        } else {
          await governance.release(input.permitId, error?.code ?? 'failed');
        }
      }
      const inserted = await withTransaction(db, async (tx) => {
        const ok = await insertExecutionOnce(tx, {
          id: input.executionId,
          project_id: input.projectId,
          route: input.route,
          operation: input.request.operation,
          mode: input.mode,
          status,
          status_code: statusCode,
          permit_id: input.permitId,
          provider: status === 'denied' ? primary.provider : target?.provider ?? null,
          model: status === 'denied' ? primary.model : target?.model ?? null,
          workflow_intent_id: input.workflowIntentId,
          idempotency_key: input.idempotencyKey,
          input_tokens: envelope.usage.input_tokens,
          output_tokens: envelope.usage.output_tokens,
          cost_usd_micros: envelope.usage.cost_usd_micros,
          estimated_final: envelope.usage.estimated_final,
          error_code: error?.code ?? null,
          created_at: new Date(input.createdAt),
          completed_at: completedAt,
          duration_ms: envelope.timing.duration_ms,
          envelope,
        });
        if (ok) await appendEvents(tx, tail);
        return ok;
      });
      if (!inserted) {
        const stored = await findExecutionById(db, input.executionId);
        if (stored) return stored.envelope;
      }
      return envelope;
    },
  };
}

export type ExecutionActivities = ReturnType<typeof createExecutionActivities>;
export type { ProviderId };
