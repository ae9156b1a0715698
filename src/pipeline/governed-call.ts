/**
 * The governed call in the API process, once for every surface that runs one: `/v1/executions`
 * (sync and stream), `/v1/execute` and the five proxies.
 *
 *   call headers checked → Idempotency-Key claimed (or a finished call's answer replayed, or an
 *   in-flight one joined) → a call reserved from the intent (X-Svc-Workflow-Id) → govern (permit
 *   with its in-flight mark, reservation, rate windows: one statement) → denied: record, answer →
 *   dispatch (the surface's attempts) → record (call record, spend, key: one statement) → answer
 *
 * A surface supplies a `Surface`: its answers (envelope or provider-native), its refusals in its
 * own error form, and its dispatch. Nothing here sees HTTP. The steps are the activity functions
 * of activities/governed-call.ts; the jobWorkflow runs the same steps durably.
 */
import type { GovernedCallActivities, GovernSpec } from '../../activities/governed-call';
import type { Config } from '../config';
import type { Db } from '../db/pool';
import type { NewEvent } from '../events/types';
import { claimIdempotencyKey, releaseIdempotencyKey, type StoredResponse } from '../db/repositories/idempotency';
import type { ExecutionEnvelope } from '../executions/envelope';
import type { IdempotencyCompletion } from '../executions/record';
import { governJoined, joinIntent, type IntentJoin } from '../executions/reservation-denial';
import { WORKFLOW_ID_PATTERN } from '../executions/schema';
import type { DispatchOutcome, ExecutionInput, GovernOutcome } from '../executions/types';
import type { IntentReservations } from '../intents/reservations';
import { PERMIT_LEASE_KEY } from '../../workflows/intent-messages';
import type { Span } from '@opentelemetry/api';
import { genAiCallAttributes, setGenAiOutcome } from '../telemetry/gen-ai';
import { inSpan } from '../telemetry/tracing';

const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** Beyond the dispatch deadline: how long reconciliation may take to close a dead process's call. */
const RECONCILIATION_MARGIN_MS = 75_000;
/** How often a request that found its Idempotency-Key in flight looks for the first call's answer. */
const JOIN_POLL_MS = 25;

export interface PipelineDeps {
  db: Db;
  config: Pick<Config, 'providerTimeouts' | 'idempotencyRetentionHours'>;
  calls: GovernedCallActivities;
  intentReservations: Pick<IntentReservations, 'reserveCall' | 'giveBack'>;
}

/** The headers that shape a call, as the caller sent them (absent: null). */
export interface CallHeaders {
  workflowId: string | null;
  idempotencyKey: string | null;
}

/** The pipeline's own refusals, in the surface's error form (thrown as they are). */
export interface SurfaceErrors {
  invalidWorkflowId(): Error;
  invalidIdempotencyKey(): Error;
  /** The key was used with another payload. */
  idempotencyConflict(key: string): Error;
  /** The key's call finished without an answer to replay (a stream, or an answer not kept). */
  notReplayable(key: string, executionId: string | null): Error;
  /** The key's call is still running past the time it can take. */
  inFlight(key: string, executionId: string | null): Error;
  /** Set where a repeated key is refused at once rather than joined (streams are never replayed). */
  noJoin?(key: string, executionId: string | null): Error;
}

/** Validates the call-shaping headers; a bad one is the surface's 400. */
export function checkCallHeaders(h: CallHeaders, errors: SurfaceErrors): CallHeaders {
  if (h.workflowId !== null && !WORKFLOW_ID_PATTERN.test(h.workflowId)) throw errors.invalidWorkflowId();
  if (h.idempotencyKey !== null && !IDEMPOTENCY_KEY_PATTERN.test(h.idempotencyKey)) throw errors.invalidIdempotencyKey();
  return h;
}

/** The time a call may take at most: every target's full timeout, plus room for recording. */
export function dispatchTimeoutMs(config: Pick<Config, 'providerTimeouts'>, routing: { fallback: readonly unknown[] }): number {
  return config.providerTimeouts.totalMs * (1 + routing.fallback.length) + 5_000;
}

/** What a surface's dispatch hands back: the outcome to record and how to answer once it is. */
export interface Dispatched<R> {
  outcome: DispatchOutcome;
  fallbackEvents?: NewEvent[];
  /** The input to record, when dispatch changed it (the output ceiling governance set). */
  input?: ExecutionInput;
  answer(envelope: ExecutionEnvelope): R;
  /** Runs once the call is recorded, whether or not recording succeeded. */
  done?(): void;
}

export interface Surface<R> {
  errors: SurfaceErrors;
  /** The Idempotency-Key's scope. */
  scope: string;
  /** What an Idempotency-Key is bound to. */
  requestHash(): Promise<string>;
  replay(stored: StoredResponse): R;
  /** What the key keeps once the call is recorded: an answer to replay, null (completed, nothing kept) or 'release'. */
  respond(envelope: ExecutionEnvelope): StoredResponse | null | 'release';
  /** What closing the call after a crash does with its key. */
  onInterrupted: 'store_envelope' | 'mark_completed' | 'release';
  /** govern()'s arguments besides the input; `lease` is the intent lease the call was taken from. */
  govern(lease: string | undefined): Omit<GovernSpec, 'input'>;
  /** Told the decision before anything is recorded (what the key keeps may depend on it). */
  governed?(gov: GovernOutcome): void;
  /** The answer to a call governance did not allow (its record is written). */
  denied(envelope: ExecutionEnvelope, gov: GovernOutcome): R;
  dispatch(input: ExecutionInput, gov: GovernOutcome): Promise<Dispatched<R>>;
}

/**
 * Runs one governed call: `input` carries its ids, request, routing, intent and key (checked). The
 * call is one span (`governed.call`): the GenAI attributes of its primary target and of its outcome,
 * and Tollgate's own (permit, decision, reason code, cost); each provider attempt is a child span.
 */
export function runGovernedCall<R>(deps: PipelineDeps, input: ExecutionInput, surface: Surface<R>): Promise<R> {
  const { primary } = input.routing;
  const attributes = {
    ...genAiCallAttributes({ operation: input.request.operation, provider: primary.provider, model: primary.model }),
    'tollgate.execution_id': input.executionId,
    'tollgate.permit_id': input.permitId,
  };
  return inSpan('governed.call', attributes, (span) => runGoverned(deps, input, surface, span));
}

async function runGoverned<R>(deps: PipelineDeps, input: ExecutionInput, surface: Surface<R>, span: Span): Promise<R> {
  const { db, calls } = deps;
  const key = input.idempotencyKey;
  if (key) {
    const replayed = await claimKey(deps, input, key, surface);
    if (replayed) return replayed.answer;
  }
  let governed = false;
  try {
    const intent: IntentJoin = input.workflowIntentId ? await joinIntent(deps.intentReservations, input.projectId, input.workflowIntentId) : {};
    // Refused: denied (a permit and a timeline), with no provider call.
    if (intent.refusal) input.reservationDenied = intent.refusal;
    const { lease } = intent;
    const idempotency: IdempotencyCompletion | undefined = key ? { scope: surface.scope, key, respond: (env) => surface.respond(env) } : undefined;
    const { estimatedInputTokens: _estimate, ...gov } = await governJoined(deps.intentReservations, { projectId: input.projectId, workflowId: input.workflowIntentId, intent }, () => {
      const spec = surface.govern(lease);
      return calls.govern({
        ...spec,
        input,
        permitMetadata: { ...spec.permitMetadata, ...(lease ? { [PERMIT_LEASE_KEY]: lease } : {}) },
        inProcess: { ...spec.inProcess, ...(key ? { idempotency: { scope: surface.scope, key, onInterrupted: surface.onInterrupted } } : {}) },
      });
    });
    governed = true;
    span.setAttributes({ 'tollgate.decision': gov.decision, 'tollgate.reason_code': gov.reason_code });
    surface.governed?.(gov);
    if (gov.decision !== 'allow') {
      const envelope = await calls.record(input, { kind: 'governed_out', gov }, { idempotency });
      // A refusal is governance working, not a failed operation: no error.type (the decision says it).
      span.setAttribute('tollgate.cost_usd_micros', envelope.usage.cost_usd_micros);
      return surface.denied(envelope, gov);
    }
    const d = await surface.dispatch(input, gov);
    try {
      const envelope = await calls.record(d.input ?? input, { kind: 'dispatched', gov, outcome: d.outcome }, { idempotency, fallbackEvents: d.fallbackEvents });
      const o = d.outcome;
      setGenAiOutcome(span, o.ok ? { usage: envelope.usage, responseModel: o.result.provider_model } : { usage: envelope.usage, failure: o.failure });
      span.setAttribute('tollgate.cost_usd_micros', envelope.usage.cost_usd_micros);
      return d.answer(envelope);
    } finally {
      d.done?.();
    }
  } catch (err) {
    // Nothing was governed: the key may be used again. After governance, the call's record (or
    // reconciliation) completes the key.
    if (key && !governed) await releaseIdempotencyKey(db, { projectId: input.projectId, scope: surface.scope, key }).catch(() => undefined);
    throw err;
  }
}

/**
 * Claims the call's Idempotency-Key. A key whose call finished answers with its stored answer; one
 * whose call is running here or in another process is waited on until that call can no longer be
 * running (its dispatch deadline, then reconciliation's margin). Returns null once claimed.
 */
async function claimKey<R>(deps: PipelineDeps, input: ExecutionInput, key: string, surface: Surface<R>): Promise<{ answer: R } | null> {
  const requestHash = await surface.requestHash();
  const deadline = Date.now() + input.dispatchTimeoutMs + RECONCILIATION_MARGIN_MS;
  for (;;) {
    const claim = await claimIdempotencyKey(deps.db, {
      projectId: input.projectId,
      scope: surface.scope,
      key,
      requestHash,
      resourceId: input.executionId,
      retentionHours: deps.config.idempotencyRetentionHours,
    });
    if (claim.outcome === 'claimed') return null;
    if (claim.outcome === 'conflict') throw surface.errors.idempotencyConflict(key);
    if (surface.errors.noJoin) throw surface.errors.noJoin(key, claim.resourceId);
    if (claim.outcome === 'completed') {
      if (claim.response) return { answer: surface.replay(claim.response) };
      throw surface.errors.notReplayable(key, claim.resourceId);
    }
    if (Date.now() > deadline) throw surface.errors.inFlight(key, claim.resourceId);
    await new Promise((r) => setTimeout(r, JOIN_POLL_MS));
  }
}
