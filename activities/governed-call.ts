/**
 * The steps of a governed call, as activity functions built from their dependencies:
 *
 *   govern   → policy, budget, rate and firewall checks; the permit, its reservation and (for the
 *              in-process pipeline) its in-flight mark with the dispatch start, in one statement
 *   dispatch → the provider call in the normalized shape, through the one fallback engine
 *   record   → the record (with its lifecycle when the call was dispatched), spend settled or
 *              released, idempotency: one statement
 *
 * The API process runs them in process for every governed surface through one entry
 * (src/pipeline/governed-call.ts: executions, execute and the proxies, which bring their own native
 * attempt instead of `dispatch`); the jobWorkflow runs them durably (activities/jobs.ts).
 */
import type { Clock } from '../src/clock';
import type { Db } from '../src/db/pool';
import type { NewEvent } from '../src/events/types';
import { outputCeilingSpec } from '../src/executions/output-ceiling';
import { normalizedRequest, recordCall, type RecordOptions } from '../src/executions/record';
import { recordReservationDenial } from '../src/executions/reservation-denial';
import type { ExecutionEnvelope } from '../src/executions/envelope';
import type { DispatchOutcome, ExecutionInput, GovernOutcome, RecordInput } from '../src/executions/types';
import type { Governance } from '../src/governance';
import type { GovernanceRequest } from '../src/governance/types';
import type { Logger } from '../src/logger';
import { dispatchWithFallback } from '../src/pipeline/fallback';
import type { DispatchStart } from '../src/executions/lifecycle';
import { closingOf } from '../src/pipeline/inflight';
import type { PricingCatalog } from '../src/pricing/types';
import { estimatedUsage } from '../src/providers/shared/usage';
import { ProviderError, type NormalizedRequest, type ProviderFailure, type ProviderGateway, type ProviderResult, type Usage } from '../src/providers/types';
import type { InspectableText } from '../src/governance/firewall/roles';

import { genAiCallAttributes, providerAttempt, type GenAiMetrics } from '../src/telemetry/gen-ai';
import { inSpan, inSpanSync } from '../src/telemetry/tracing';

export interface GovernedCallDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  governance: Governance;
  pricing: PricingCatalog;
  providers: ProviderGateway;
  /** How the record of a dispatched call commits (RecordDeps.commit); the in-process pipeline passes config RECORD_COMMIT. */
  recordCommit?: 'sync' | 'async';
  /** The GenAI client metrics of the process's /metrics; absent where no /metrics is served (the worker). */
  genAi?: GenAiMetrics;
}

export interface GovernSpec {
  input: ExecutionInput;
  /** The primary target's normalized request: what is estimated and priced. */
  request: NormalizedRequest;
  /** Governance route label (`executions`, `execute`, `proxy:<provider>`). */
  route: string;
  /** Texts the prompt firewall inspects. */
  inspectableText: InspectableText[];
  /** The tools the request offers the model, by name (proxies: the native body; executions: the primary target's provider options). */
  tools?: string[];
  /** The surface's masking of its request (the firewall's `redact` action); see GovernanceRequest.redact. */
  redact?: GovernanceRequest['redact'];
  permitMetadata: Record<string, unknown>;
  /**
   * In-process pipeline: write the in-flight marker on the allow's permit (one statement), so a
   * process that dies mid-call leaves a permit reconciliation closes; the call's lifecycle events
   * are derived from its permit and record (src/executions/lifecycle-events.ts), not stored.
   * `idempotency` says what closing it does with the call's key.
   */
  /**
   * A call recorded with a lifecycle that keeps no in-flight mark (a job: its dispatch start is kept
   * on the job, activities/jobs.ts): the allow's permit.allowed and permit.expiry_scheduled are
   * derived from the permit and the record, not stored.
   */
  derivedPermitEvents?: boolean;
  inProcess?: {
    routingMeta?: Record<string, unknown>;
    startedMeta?: Record<string, unknown>;
    idempotency?: { scope: string; key: string; onInterrupted: 'store_envelope' | 'mark_completed' | 'release' };
  };
}

export interface GovernResult extends GovernOutcome {
  estimatedInputTokens: number;
}

export interface DispatchHooks {
  signal?: AbortSignal;
  /** Stream mode: each text delta as it arrives. */
  onDelta?: (text: string) => void;
  /** True once the caller went away (stream): the failure is recorded as a client disconnect. */
  clientGone?: () => boolean;
}

export function createGovernedCallActivities(deps: GovernedCallDeps) {
  const { db, clock, governance, pricing, providers } = deps;

  function govern(spec: GovernSpec): Promise<GovernResult> {
    const attributes = { 'tollgate.execution_id': spec.input.executionId, 'tollgate.permit_id': spec.input.permitId, ...genAiCallAttributes(spec.request) };
    return inSpan('govern', attributes, async (span) => {
      const r = await governNow(spec);
      span.setAttributes({ 'tollgate.decision': r.decision, 'tollgate.reason_code': r.reason_code });
      return r;
    });
  }

  async function governNow(spec: GovernSpec): Promise<GovernResult> {
    const { input, request } = spec;
    if (input.reservationDenied) {
      return { ...(await recordReservationDenial({ db, clock }, input, request)), estimatedInputTokens: 0 };
    }
    const est = inSpanSync('governance.estimate', {}, () => pricing.estimate(request));
    const now = clock.now();
    let onAllow: { closing: Record<string, unknown>; deadline: Date } | undefined;
    let dispatch: DispatchStart | undefined;
    if (spec.inProcess) {
      const t = input.routing.primary;
      dispatch = {
        at: now.toISOString(),
        primary: { provider: t.provider, model: t.model },
        routing: { reason_code: input.routing.reason_code, requested_provider: input.routing.requested_provider, requested_model: input.routing.requested_model, ...spec.inProcess.routingMeta },
        started: { operation: request.operation, mode: input.mode, ...spec.inProcess.startedMeta },
        stream: input.mode === 'stream',
      };
      onAllow = { closing: closingOf(input, est.input_tokens, spec.inProcess.idempotency ?? null, dispatch), deadline: new Date(now.getTime() + input.dispatchTimeoutMs) };
    }
    const d = await governance.evaluate(
      {
        projectId: input.projectId,
        requestId: input.executionId,
        route: spec.route,
        operation: request.operation,
        provider: request.provider,
        model: request.model,
        estimatedInputTokens: est.input_tokens,
        estimatedOutputTokens: est.output_tokens,
        estimatedCostMicros: est.cost_micros,
        workflowId: input.workflowIntentId,
        inspectableText: spec.inspectableText,
        ...(spec.tools?.length ? { tools: spec.tools } : {}),
        ...(spec.redact ? { redact: spec.redact } : {}),
        output: outputCeilingSpec(pricing, input, request, est.input_tokens),
      },
      { persist: true, permitId: input.permitId, permitMetadata: spec.permitMetadata, ...(onAllow ? { onAllow } : {}), ...(spec.derivedPermitEvents ? { derivePermitEvents: true } : {}) },
    );
    const out: GovernResult = { decision: d.decision, reason_code: d.reason_code, display_reason: d.display_reason, actions: d.actions, estimatedInputTokens: est.input_tokens };
    if (dispatch && d.decision === 'allow') out.dispatch = dispatch;
    if (d.retry_after_seconds !== undefined) out.retry_after_seconds = d.retry_after_seconds;
    if (d.max_output_tokens !== undefined) out.max_output_tokens = d.max_output_tokens;
    const fw = d.metadata.firewall as { mode?: string; redacted?: string[]; flagged?: string[] } | undefined;
    if (d.decision === 'allow' && fw?.mode === 'allow') out.firewall = { redacted: fw.redacted ?? [], flagged: fw.flagged ?? [] };
    return out;
  }

  /**
   * The provider call in the normalized shape, primary then the explicit fallback chain. Never
   * throws for a provider failure: the outcome is data for `record`. Also returns the events of
   * fallback tries, which `record` stores only for a call recorded without a lifecycle (the
   * lifecycle's attempts hold them otherwise).
   */
  function dispatch(input: ExecutionInput, hooks: DispatchHooks = {}): Promise<{ outcome: DispatchOutcome; fallbackEvents: NewEvent[] }> {
    return inSpan('dispatch', { 'tollgate.execution_id': input.executionId, 'tollgate.stream': input.mode === 'stream' }, () => dispatchNow(input, hooks));
  }

  async function dispatchNow(input: ExecutionInput, hooks: DispatchHooks = {}): Promise<{ outcome: DispatchOutcome; fallbackEvents: NewEvent[] }> {
    const targets = [input.routing.primary, ...input.routing.fallback];
    let streamed = '';
    type Try = { ok: boolean; failure?: ProviderFailure; final?: boolean; result?: ProviderResult; partial?: Usage | null; req: NormalizedRequest };
    const outcomeOf = (t: Try) => (t.ok ? { usage: t.result!.usage, responseModel: t.result!.provider_model } : { failure: t.failure, usage: t.partial });
    const run = await dispatchWithFallback<Try>(input, targets, (target, i) => providerAttempt(deps.genAi, { operation: input.request.operation, provider: target.provider, model: target.model, attempt: i + 1 }, async (span) => {
      const req = normalizedRequest(input, target);
      try {
        const result = await providers.dispatch(req, {
          projectId: input.projectId,
          signal: hooks.signal,
          onDelta: hooks.onDelta
            ? (text) => {
                streamed += text;
                hooks.onDelta!(text);
              }
            : undefined,
        });
        return { ok: true, result, req };
      } catch (err) {
        const aborted = Boolean(hooks.signal?.aborted);
        const failure: ProviderFailure =
          err instanceof ProviderError ? err.failure : { kind: aborted ? 'aborted' : 'network', status: null, retryable: false, message: err instanceof Error ? err.message : String(err) };
        const partial = err instanceof ProviderError ? err.partialUsage ?? null : null;
        span.setAttribute('tollgate.failure', failure.kind);
        // Once a delta reached the caller, another target would splice two answers: no fallback.
        return { ok: false, failure, partial, req, final: streamed.length > 0 || aborted };
      }
    }, outcomeOf), { clock, stream: input.mode === 'stream', signal: hooks.signal });
    const { last, target, attempts, fallbackOccurred } = run;
    if (last.ok) return { outcome: { ok: true, target, result: last.result!, attempts, fallbackOccurred }, fallbackEvents: run.events };
    const gone = hooks.clientGone?.() ?? false;
    let partial = last.partial ?? null;
    if (gone) partial = { ...(partial ?? estimatedUsage(last.req, streamed)), estimated: true };
    const { native: _native, ...plain } = last.failure!;
    return {
      outcome: {
        ok: false,
        kind: gone ? 'aborted' : 'provider',
        target,
        failure: gone ? { ...plain, kind: 'aborted', message: 'client disconnected' } : plain,
        partialUsage: partial,
        attempts,
        fallbackOccurred,
      },
      fallbackEvents: run.events,
    };
  }

  function record(input: ExecutionInput, rec: RecordInput, opts: RecordOptions = {}): Promise<ExecutionEnvelope> {
    return inSpan('record', { 'tollgate.execution_id': input.executionId, 'tollgate.record_kind': rec.kind }, async (span) => {
      const envelope = await recordCall({ db, clock, pricing, commit: deps.recordCommit }, input, rec, opts);
      // Here too, not only on the governed call's span: a job's steps run as separate activities.
      span.setAttribute('tollgate.cost_usd_micros', envelope.usage.cost_usd_micros);
      return envelope;
    });
  }

  return { govern, dispatch, record };
}

export type GovernedCallActivities = ReturnType<typeof createGovernedCallActivities>;
