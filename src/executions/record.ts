/**
 * Recording a finished governed call: builds the envelope, then in one statement
 * (`tollgate_record_calls`, shared by a batch of calls: src/db/functions/tollgate_record_calls.sql) inserts the
 * call record, settles or releases spend, appends the completion events, removes the in-flight
 * row and completes the idempotency key.
 * The row insert is the exactly-once guard: a second recording of the same execution (a retried
 * activity, reconciliation racing a slow process) writes nothing and returns the stored envelope.
 */
import type { Clock } from '../clock';
import type { Db } from '../db/pool';
import { batchEvents } from '../events/batch';
import { requestHasEvent } from '../db/repositories/events';
import type { NewEvent } from '../events/types';
import { findCallRecordById } from '../db/repositories/call-records';
import type { StoredResponse } from '../db/repositories/idempotency';
import { recordCalls } from '../db/repositories/governed-calls';
import { createProjectBatcher, type ProjectBatcher } from '../pipeline/batcher';
import type { PricingCatalog } from '../pricing/types';
import { estimateInputTokens, makeUsage } from '../providers/shared/usage';
import type { NormalizedRequest, ProviderResult, Usage } from '../providers/types';
import { buildEnvelope, ExecutionEnvelope, ExecutionStatus, storedEnvelope } from './envelope';
import { EXECUTION_EVENT_PHASES, EXECUTION_EVENT_SOURCE, type ExecutionEventType } from './lifecycle-events';
import { lifecycleOf, type Lifecycle, type TurnLifecycle } from './lifecycle';
import type { Target } from './types';
import type { AttemptRecord, ExecutionInput, RecordedCall, RecordInput } from './types';

export interface RecordDeps {
  db: Db;
  clock: Clock;
  pricing: PricingCatalog;
  /**
   * `async`: the record of a dispatched call commits without waiting for the WAL flush. Only for
   * calls begun in process, whose durable in-flight row lets reconciliation close the call if the
   * database loses the record in a crash (docs/decisions/recording-commit.md). Default `sync`.
   */
  commit?: 'sync' | 'async';
}

// Recordings share one tollgate_record_calls statement per batch (one batcher per pool).
const recordBatchers = new WeakMap<Db, ProjectBatcher<Record<string, unknown>, boolean>>();
function recordBatcher(db: Db): ProjectBatcher<Record<string, unknown>, boolean> {
  let b = recordBatchers.get(db);
  if (!b) {
    b = createProjectBatcher(db, recordCalls);
    recordBatchers.set(db, b);
  }
  return b;
}

/** What recording does with the call's Idempotency-Key (in the same statement). */
export interface IdempotencyCompletion {
  scope: string;
  key: string;
  /** The stored response for replays; null marks the key completed without one (streams); 'release' forgets the claim. */
  respond: (envelope: ExecutionEnvelope) => StoredResponse | null | 'release';
}

export interface RecordOptions {
  /** Events of fallback tries (src/pipeline/fallback.ts), written before the completion events. */
  fallbackEvents?: NewEvent[];
  idempotency?: IdempotencyCompletion;
  /**
   * A job's call (activities/jobs.ts): the provider tries of its earlier dispatch attempts (an
   * interrupted record has no outcome to hold them) and when each later dispatch attempt started,
   * which its lifecycle keeps.
   */
  job?: { priorAttempts: AttemptRecord[]; attempts: { attempt: number; at: string; priorTries: number }[] };
}

export function normalizedRequest(input: Pick<ExecutionInput, 'request' | 'mode'>, target: Target): NormalizedRequest {
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

/**
 * The timeline events of one execution (source execution_events): `(type, at, target, metadata)`,
 * the phase following from the type.
 */
export function executionEvents(input: Pick<RecordedCall, 'projectId' | 'permitId' | 'executionId'>) {
  return (eventType: ExecutionEventType, at: Date | string, t: Partial<Target> | null, metadata: Record<string, unknown> = {}): NewEvent => ({
    projectId: input.projectId,
    eventType,
    source: EXECUTION_EVENT_SOURCE,
    phase: EXECUTION_EVENT_PHASES[eventType],
    provider: t?.provider ?? null,
    model: t?.model ?? null,
    permitId: input.permitId,
    requestId: input.executionId,
    metadata,
    timestamp: new Date(at),
  });
}

/**
 * Builds the envelope, settles or releases spend, and persists the call record and its
 * completion events once. Safe to retry: a second call finds the row and returns the stored envelope.
 */
export async function recordCall(deps: RecordDeps, input: RecordedCall, rec: RecordInput, opts: RecordOptions = {}): Promise<ExecutionEnvelope> {
  const { db, clock, pricing } = deps;
  const completedAt = clock.now();
  const gov = rec.gov;
  // A dispatched call (the in-process pipeline's, a job's) keeps its lifecycle on the record, which
  // its events derive from (src/executions/lifecycle-events.ts): no event rows, so none is built.
  // Other records (denials, a job that never reached dispatch) store theirs.
  // A session turn's record keeps its own (its usage and end; src/sessions/turn-record.ts).
  const keepsLifecycle = (Boolean(gov.dispatch) && rec.kind !== 'governed_out') || rec.kind === 'session_turn';
  const ev = executionEvents(input);
  const tail: NewEvent[] = [];
  const add = (...a: Parameters<typeof ev>): void => {
    if (!keepsLifecycle) tail.push(ev(...a));
  };
  const primary = input.routing.primary;
  let status: ExecutionStatus;
  let statusCode: number;
  let target: Target | null = primary;
  let usage: Usage | null = null;
  let cost: number | null = null;
  let result: ProviderResult | null = null;
  let error: { code: string; message: string } | null = null;
  let fallbackOccurred = false;

  if (rec.kind === 'governed_out') {
    status = 'denied';
    statusCode = gov.decision === 'throttle' ? 429 : 403;
    target = null;
    error = {
      code: gov.reason_code === 'prompt_firewall_blocked' ? 'prompt_firewall_blocked' : gov.decision === 'throttle' ? 'throttled' : 'denied',
      message: gov.display_reason,
    };
    add('request.denied', completedAt, primary, { decision: gov.decision, reason_code: gov.reason_code, reason: gov.display_reason, status_code: statusCode });
  } else if (rec.kind === 'interrupted') {
    // The dispatch activity never reported back (its worker died, or it timed out): the
    // provider may have received and billed the call, so it is not repeated. Usage is the
    // estimated input of the request when the call was sent: a pipeline call's dispatch start
    // (its provider.request_sent is derived from it), another call's stored provider.request_sent.
    status = 'failed';
    statusCode = 502;
    let inputTokens = rec.estimatedInputTokens;
    if (inputTokens === undefined) {
      const sent = gov.dispatch !== undefined || (await requestHasEvent(db, input.projectId, input.executionId, 'provider.request_sent'));
      if (sent) inputTokens = estimateInputTokens(normalizedRequest(input, primary));
    }
    if (inputTokens !== undefined) {
      usage = makeUsage({ input_tokens: inputTokens, output_tokens: 0 }, true);
      cost = pricing.costMicros(primary.provider, primary.model, usage);
    }
    error = { code: 'dispatch_interrupted', message: `The provider call did not report back (${rec.message}); its outcome is unknown and it was not repeated` };
    add('provider.response_received', completedAt, primary, { ok: false, failure_kind: 'interrupted' });
  } else if (rec.kind === 'session_turn') {
    // The client called its provider: the usage it reported and its cost at the session's prices,
    // or, closed with its session unreported, failed as a call that never reported back is.
    const settled = rec.turn.settled;
    status = settled ? 'completed' : 'failed';
    statusCode = settled ? 200 : 502;
    usage = settled?.usage ?? null;
    cost = settled?.costMicros ?? null;
    if (!settled) error = { code: 'usage_not_reported', message: `The session closed before the turn's usage was reported (${rec.turn.closedBy ?? 'closed'}); nothing was charged for it` };
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
      const tools = o.result.tool_calls?.length ? { tool_calls: o.result.tool_calls } : {};
      add('provider.response_received', last.receivedAt, o.target, { ok: true, status: 200, attempt: o.attempts.length, finish_reason: o.result.finish_reason ?? null, ...tools });
    } else {
      status = 'failed';
      statusCode = o.kind === 'aborted' ? 499 : 502;
      usage = o.partialUsage;
      cost = usage ? pricing.costMicros(o.target.provider, o.target.model, usage) : null;
      error = o.kind === 'aborted' ? { code: 'client_disconnected', message: o.failure.message } : { code: 'upstream_error', message: o.failure.message };
      add('provider.response_received', last?.receivedAt ?? completedAt, o.target, { ok: false, status: o.failure.status, failure_kind: o.failure.kind, attempt: o.attempts.length });
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
    add('usage.recorded', completedAt, target, {
      input_tokens: envelope.usage.input_tokens,
      output_tokens: envelope.usage.output_tokens,
      total_tokens: envelope.usage.total_tokens,
      cost_usd_micros: envelope.usage.cost_usd_micros,
      estimated_final: envelope.usage.estimated_final,
    });
  }
  if (status === 'completed') add('request.completed', completedAt, target, { status_code: statusCode });
  else if (status === 'failed') add('request.errored', completedAt, target, { status_code: statusCode, error_code: error?.code });

  // Spend: an allowed call settles what it used (completed, or failed with usage) or releases its reservation.
  let settle: { cost: number; input: number; output: number } | null = null;
  let releaseReason: string | null = null;
  if (gov.decision === 'allow') {
    if (status === 'completed' || (usage && (cost ?? 0) > 0)) settle = { cost: cost ?? 0, input: usage?.input_tokens ?? 0, output: usage?.output_tokens ?? 0 };
    else releaseReason = (rec.kind === 'session_turn' && rec.turn.closedBy) || error?.code || 'failed';
  }
  if (settle && (!Number.isInteger(settle.cost) || settle.cost < 0)) throw new Error('recordCall: cost must be a non-negative integer');
  let lifecycle: Lifecycle | TurnLifecycle | null = null;
  if (rec.kind === 'session_turn') lifecycle = { turn: rec.turn.turnNumber };
  else if (gov.dispatch && rec.kind !== 'governed_out') {
    lifecycle = lifecycleOf(
      input.createdAt,
      gov.dispatch,
      {
        attempts: rec.kind === 'dispatched' ? rec.outcome.attempts : opts.job?.priorAttempts ?? [],
        end: rec.kind === 'interrupted'
          ? { kind: 'interrupted' }
          : rec.outcome.ok
            ? { kind: 'ok', finishReason: rec.outcome.result.finish_reason ?? null, toolCalls: rec.outcome.result.tool_calls }
            : { kind: 'failed', failureKind: rec.outcome.failure.kind, status: rec.outcome.failure.status },
        envelopeReason: envelope.routing.reason_code,
        jobAttempts: opts.job?.attempts,
      },
    );
  }
  const row = {
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
    intent_id: input.workflowIntentId,
    idempotency_key: input.idempotencyKey,
    key_id: input.keyId ?? null,
    job_id: input.jobId ?? null,
    ...(input.sessionId ? { session_id: input.sessionId } : {}),
    input_tokens: envelope.usage.input_tokens,
    output_tokens: envelope.usage.output_tokens,
    cost_usd_micros: envelope.usage.cost_usd_micros,
    estimated_final: envelope.usage.estimated_final,
    error_code: error?.code ?? null,
    created_at: input.createdAt,
    completed_at: completedAt.toISOString(),
    duration_ms: envelope.timing.duration_ms,
    envelope: storedEnvelope(envelope),
    ...(lifecycle ? { lifecycle } : {}),
  };
  let idem: Record<string, unknown> | null = null;
  let idemBody: Buffer | null = null;
  if (opts.idempotency) {
    const r = opts.idempotency.respond(envelope);
    idem = { scope: opts.idempotency.scope, key: opts.idempotency.key };
    if (r === 'release') idem.release = true;
    else if (r) {
      idem.status = r.status;
      idem.headers = r.headers;
      idemBody = r.body;
    }
  }
  const events = keepsLifecycle ? [] : opts.fallbackEvents?.length ? [...opts.fallbackEvents, ...tail] : tail;
  const ok = await recordBatcher(db).submit(input.projectId, {
    row,
    ...batchEvents(events),
    settle,
    release_reason: releaseReason,
    idem,
    idem_body: idemBody ? idemBody.toString('base64') : null,
    sync: !(deps.commit === 'async' && rec.kind === 'dispatched'),
  });
  if (!ok) {
    const stored = await findCallRecordById(db, input.executionId);
    if (stored) return stored.envelope;
  }
  return envelope;
}
