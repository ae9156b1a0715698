/**
 * POST /v1/executions and POST /v1/execute: the governed-call pipeline in the API process.
 *
 *   idempotency claim → intent reservation (X-Svc-Workflow-Id) → govern (permit, reservation,
 *   first events, in-flight row: one statement) → dispatch (fallback engine; stream deltas go
 *   straight to the SSE response) → record (row, spend, events, idempotency: one statement) → answer
 *
 * No Temporal workflow per call (docs/decisions.md, "Governed-call pipeline"). A process that dies
 * mid-call leaves its in-flight row; the reconciliation workflow closes it.
 *
 * Plain inputs and results: the route (src/api/routes/executions.ts) turns HTTP into a `Caller`
 * and applies the `ExecutionReply`; a stream is written through a `StreamSink`.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { GovernedCallActivities } from '../../activities/governed-call';
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Db } from '../db/pool';
import { errors } from '../errors';
import type { IntentReservations } from '../temporal/intent-reservations';
import { PERMIT_LEASE_KEY } from '../../workflows/intent-messages';
import { claimIdempotencyKey, releaseIdempotencyKey, type StoredResponse } from '../db/repositories/idempotency';
import { newId } from '../ids';
import { requestInspectable } from '../providers/shared/usage';
import { reservationDenial } from './reservation-denial';
import type { ExecutionEnvelope, ExecutionRoute } from './envelope';
import { normalizedRequest, type IdempotencyCompletion } from './record';
import { withOutputCeiling } from './output-ceiling';
import { WORKFLOW_ID_PATTERN } from './schema';
import type { ExecutionInput, RecordInput } from './types';

export interface PreparedExecution {
  route: ExecutionRoute;
  mode: 'sync' | 'stream';
  request: ExecutionInput['request'];
  routing: ExecutionInput['routing'];
  resolved?: ExecutionInput['resolved'];
  /** The validated request body: what an Idempotency-Key is bound to. */
  body: unknown;
}

export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface ExecutionServiceDeps {
  db: Db;
  clock: Clock;
  config: Pick<Config, 'providerTimeouts' | 'idempotencyRetentionHours'>;
  calls: GovernedCallActivities;
  intentReservations: Pick<IntentReservations, 'reserveCall'>;
}

/** Who calls, and the headers that shape the call (validated by the route). */
export interface Caller {
  projectId: string;
  /** The API key that made the call (usage by key: GET /v1/projects/{id}/usage). */
  keyId: string;
  workflowId: string | null;
  idempotencyKey: string | null;
}

/** A JSON answer: the envelope (or a replayed stored response) with its status and headers. */
export interface ExecutionReply {
  status: number;
  headers: Record<string, string>;
  body: ExecutionEnvelope | Buffer;
}

/** Where a stream goes: opened on its first delta, written as SSE, told when the caller leaves. */
export interface StreamSink {
  open(headers: Record<string, string>): void;
  write(chunk: string): void;
  end(): void;
  /** Subscribes to the caller going away; returns the unsubscribe. */
  onClose(listener: () => void): () => void;
}
/** Beyond the dispatch deadline: how long reconciliation may take to close a dead process's call. */
const RECONCILIATION_MARGIN_MS = 75_000;
const JOIN_POLL_MS = 25;

function payloadHash(route: string, body: unknown, workflowId: string | null): string {
  return createHash('sha256')
    .update(canonicalize({ route, body, workflow_id: workflowId }) as string)
    .digest('hex');
}

function responseHeaders(env: ExecutionEnvelope, permitId: string, retryAfter: number | undefined): Record<string, string> {
  const headers: Record<string, string> = { 'x-svc-permit-id': permitId };
  if (env.status_code === 429 && retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  return headers;
}

function replay(stored: StoredResponse): ExecutionReply {
  return { status: stored.status, headers: { ...stored.headers, 'content-type': 'application/json', 'idempotent-replayed': 'true' }, body: stored.body };
}

/** Validates the call-shaping headers into a `Caller` (400 validation_error naming the header). */
export function callerOf(auth: { projectId: string; keyId: string }, header: (name: string) => string): Caller {
  const workflowId = header('x-svc-workflow-id') || null;
  if (workflowId !== null && !WORKFLOW_ID_PATTERN.test(workflowId)) {
    throw errors.validation([{ path: 'headers.x-svc-workflow-id', message: 'X-Svc-Workflow-Id must be 1 to 255 characters of [A-Za-z0-9_-]', code: 'invalid_format' }]);
  }
  const idempotencyKey = header('idempotency-key') || null;
  if (idempotencyKey !== null && !IDEMPOTENCY_KEY_PATTERN.test(idempotencyKey)) {
    throw errors.validation([{ path: 'headers.idempotency-key', message: 'Idempotency-Key must be 1 to 255 visible ASCII characters', code: 'invalid_format' }]);
  }
  return { projectId: auth.projectId, keyId: auth.keyId, workflowId, idempotencyKey };
}

/**
 * Runs one governed execution. Returns the JSON reply, or null when the answer went out as a
 * stream through `sink` (stream mode; a stream that fails before its first delta is a JSON reply).
 */
export async function runExecution(deps: ExecutionServiceDeps, caller: Caller, prep: PreparedExecution, sink?: StreamSink): Promise<ExecutionReply | null> {
  const { calls, clock, db, config } = deps;
  const auth = { projectId: caller.projectId };
  const workflowHeader = caller.workflowId;
  const key = caller.idempotencyKey;
  const stream = prep.mode === 'stream';
  const executionId = newId('exec_req');
  const permitId = newId('permit');
  const scope = prep.route;
  const dispatchTimeoutMs = config.providerTimeouts.totalMs * (1 + prep.routing.fallback.length) + 5_000;

  if (key) {
    const requestHash = payloadHash(prep.route, prep.body, workflowHeader);
    const deadline = Date.now() + dispatchTimeoutMs + RECONCILIATION_MARGIN_MS;
    for (;;) {
      const claim = await claimIdempotencyKey(db, { projectId: auth.projectId, scope, key, requestHash, resourceId: executionId, retentionHours: config.idempotencyRetentionHours });
      if (claim.outcome === 'claimed') break;
      if (claim.outcome === 'conflict') throw errors.idempotencyConflict(key);
      if (stream) {
        throw errors.conflict('idempotency_stream_not_replayable', 'This Idempotency-Key was already used for a stream; streams are not replayed and the call is not repeated', {
          idempotency_key: key,
          execution_id: claim.resourceId,
        });
      }
      if (claim.outcome === 'completed' && claim.response) return replay(claim.response);
      if (claim.outcome === 'completed' || Date.now() > deadline) {
        throw errors.conflict('idempotency_in_flight', 'A request with this Idempotency-Key has not finished; retry later', { idempotency_key: key, execution_id: claim.resourceId });
      }
      // The first request is running (here or in another process): wait for its recorded answer.
      await new Promise((r) => setTimeout(r, JOIN_POLL_MS));
    }
  }

  const input: ExecutionInput = {
    executionId,
    permitId,
    projectId: auth.projectId,
    route: prep.route,
    mode: prep.mode,
    createdAt: clock.now().toISOString(),
    request: prep.request,
    routing: prep.routing,
    workflowIntentId: workflowHeader,
    idempotencyKey: key,
    keyId: caller.keyId,
    dispatchTimeoutMs,
    heartbeatTimeoutMs: 0,
  };
  if (prep.resolved) input.resolved = prep.resolved;

  let governed = false;
  // The intent lease the call was taken from, recorded in the permit (settlement after a crash).
  let intentLease: string | undefined;
  let retryAfter: number | undefined;
  const idempotency: IdempotencyCompletion | undefined = key
    ? {
        scope,
        key,
        // Streams are not replayed; their key only records the execution it started.
        respond: (env) => (stream ? null : { status: env.status_code, headers: responseHeaders(env, permitId, retryAfter), body: Buffer.from(JSON.stringify(env)) }),
      }
    : undefined;
  try {
    if (workflowHeader) {
      const r = await deps.intentReservations.reserveCall(auth.projectId, workflowHeader);
      // Refused: denied inside the envelope (403, a permit and a timeline), with no provider call.
      if (!r.granted) input.reservationDenied = reservationDenial(r.reason, workflowHeader);
      else if (r.lease) intentLease = r.lease;
    }
    const primaryRequest = normalizedRequest(input, prep.routing.primary);
    const { estimatedInputTokens: _e, ...gov } = await calls.govern({
      input,
      request: primaryRequest,
      route: prep.route,
      inspectableText: requestInspectable(primaryRequest),
      permitMetadata: { execution_id: executionId, mode: prep.mode, key_id: caller.keyId, ...(intentLease ? { [PERMIT_LEASE_KEY]: intentLease } : {}) },
      inProcess: { ...(key ? { idempotency: { scope, key, onInterrupted: stream ? 'mark_completed' : 'store_envelope' } } : {}) },
    });
    governed = true;
    if (gov.retry_after_seconds !== undefined) retryAfter = Math.max(1, Math.ceil(gov.retry_after_seconds));
    if (gov.decision !== 'allow') {
      const envelope = await calls.record(input, { kind: 'governed_out', gov }, { idempotency });
      return reply(envelope, permitId, retryAfter);
    }
    // Hard caps: every try sends the output ceiling governance set or lowered.
    const governedInput = withOutputCeiling(input, gov);
    if (!stream || !sink) {
      const { outcome, fallbackEvents } = await calls.dispatch(governedInput);
      const envelope = await calls.record(governedInput, { kind: 'dispatched', gov, outcome }, { idempotency, fallbackEvents });
      return reply(envelope, permitId, retryAfter);
    }
    return await runStream(deps, governedInput, gov, idempotency, sink);
  } catch (err) {
    // Nothing was governed: the key may be used again. After governance, the call's record
    // (or reconciliation) completes the key.
    if (key && !governed) await releaseIdempotencyKey(db, { projectId: auth.projectId, scope, key }).catch(() => undefined);
    throw err;
  }
}

function reply(env: ExecutionEnvelope, permitId: string, retryAfter: number | undefined): ExecutionReply {
  return { status: env.status_code, headers: responseHeaders(env, permitId, retryAfter), body: env };
}

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * Stream mode. The HTTP status is decided by the first thing that happens: a delta opens the SSE
 * stream (200); a call that ends without deltas (failed before any output) is answered with the
 * JSON envelope and its status, exactly like sync mode.
 */
async function runStream(
  deps: ExecutionServiceDeps,
  input: ExecutionInput,
  gov: Extract<RecordInput, { kind: 'dispatched' }>['gov'],
  idempotency: IdempotencyCompletion | undefined,
  sink: StreamSink,
): Promise<ExecutionReply | null> {
  let open = false;
  let clientGone = false;
  const abort = new AbortController();
  const unsubscribe = sink.onClose(() => {
    clientGone = true;
    abort.abort();
  });
  const openStream = () => {
    if (open) return;
    open = true;
    sink.open({
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-svc-permit-id': input.permitId,
    });
    const p = input.routing.primary;
    sink.write(
      sse('start', {
        id: input.executionId,
        object: 'execution',
        created_at: input.createdAt,
        status: 'in_progress',
        routing: {
          requested_provider: input.routing.requested_provider,
          requested_model: input.routing.requested_model,
          selected_provider: p.provider,
          selected_model: p.model,
          reason_code: input.routing.reason_code,
          fallback_occurred: false,
        },
      }),
    );
  };
  try {
    const { outcome, fallbackEvents } = await deps.calls.dispatch(input, {
      signal: abort.signal,
      clientGone: () => clientGone,
      onDelta: (text) => {
        if (clientGone) return;
        openStream();
        sink.write(sse('delta', { delta: { type: 'output_text_delta', text } }));
      },
    });
    const envelope = await deps.calls.record(input, { kind: 'dispatched', gov, outcome }, { idempotency, fallbackEvents });
    if (clientGone) return null;
    if (!open && envelope.status !== 'completed') return reply(envelope, input.permitId, undefined);
    openStream();
    if (envelope.status === 'completed') sink.write(sse('completion', envelope));
    else sink.write(sse('error', { error: envelope.error ?? { code: 'upstream_error', message: 'execution failed' }, execution: envelope }));
    sink.end();
    return null;
  } finally {
    unsubscribe();
  }
}
