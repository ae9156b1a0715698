/**
 * POST /v1/executions and POST /v1/execute: the executions surface of the governed-call pipeline
 * (src/pipeline/governed-call.ts). It answers with the execution envelope, refuses in the API's
 * error form, and dispatches through the fallback engine (stream deltas go straight to the SSE
 * response).
 *
 * Plain inputs and results: the route (src/api/routes/executions.ts) turns HTTP into a `Caller`
 * and applies the `ExecutionReply`; a stream is written through a `StreamSink`.
 */
import { canonicalSha256 } from '../payload-hash';
import type { Clock } from '../clock';
import { errors } from '../errors';
import type { StoredResponse } from '../db/repositories/idempotency';
import { newId } from '../ids';
import { checkCallHeaders, dispatchTimeoutMs, runGovernedCall, type Dispatched, type PipelineDeps, type Surface, type SurfaceErrors } from '../pipeline/governed-call';
import { requestInspectable } from '../providers/shared/usage';
import { maskRequest, surfaceRedaction } from '../governance/firewall';
import type { ExecutionEnvelope, ExecutionRoute } from './envelope';
import { normalizedRequest } from './record';
import { withOutputCeiling } from './output-ceiling';
import { executionTools, maskToolDefinitions, toolDefinitionTexts } from './request-tools';
import type { ExecutionInput } from './types';

export interface PreparedExecution {
  route: ExecutionRoute;
  mode: 'sync' | 'stream';
  request: ExecutionInput['request'];
  routing: ExecutionInput['routing'];
  resolved?: ExecutionInput['resolved'];
  /** The validated request body: what an Idempotency-Key is bound to. */
  body: unknown;
}

export type ExecutionServiceDeps = PipelineDeps & { clock: Clock };

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

function payloadHash(route: string, body: unknown, workflowId: string | null): Promise<string> {
  return canonicalSha256({ route, body, workflow_id: workflowId });
}

function responseHeaders(env: ExecutionEnvelope, permitId: string, retryAfter: number | undefined): Record<string, string> {
  const headers: Record<string, string> = { 'x-svc-permit-id': permitId };
  if (env.status_code === 429 && retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  return headers;
}

function replay(stored: StoredResponse): ExecutionReply {
  return { status: stored.status, headers: { ...stored.headers, 'content-type': 'application/json', 'idempotent-replayed': 'true' }, body: stored.body };
}

/** The pipeline's refusals as the API's errors (spec, "Errors"). */
function executionErrors(stream: boolean): SurfaceErrors {
  const inFlight = (key: string, executionId: string | null) =>
    errors.conflict('idempotency_in_flight', 'A request with this Idempotency-Key has not finished; retry later', { idempotency_key: key, execution_id: executionId });
  return {
    invalidWorkflowId: () =>
      errors.validation([{ path: 'headers.x-svc-workflow-id', message: 'X-Svc-Workflow-Id must be 1 to 255 characters of [A-Za-z0-9_-]', code: 'invalid_format' }]),
    invalidIdempotencyKey: () =>
      errors.validation([{ path: 'headers.idempotency-key', message: 'Idempotency-Key must be 1 to 255 visible ASCII characters', code: 'invalid_format' }]),
    idempotencyConflict: (key) => errors.idempotencyConflict(key),
    notReplayable: inFlight,
    inFlight,
    ...(stream
      ? {
          noJoin: (key: string, executionId: string | null) =>
            errors.conflict('idempotency_stream_not_replayable', 'This Idempotency-Key was already used for a stream; streams are not replayed and the call is not repeated', {
              idempotency_key: key,
              execution_id: executionId,
            }),
        }
      : {}),
  };
}

/** Validates the call-shaping headers into a `Caller` (400 validation_error naming the header). */
export function callerOf(auth: { projectId: string; keyId: string }, header: (name: string) => string): Caller {
  const h = checkCallHeaders({ workflowId: header('x-svc-workflow-id') || null, idempotencyKey: header('idempotency-key') || null }, executionErrors(false));
  return { projectId: auth.projectId, keyId: auth.keyId, ...h };
}

/**
 * Runs one governed execution. Returns the JSON reply, or null when the answer went out as a
 * stream through `sink` (stream mode; a stream that fails before its first delta is a JSON reply).
 */
export async function runExecution(deps: ExecutionServiceDeps, caller: Caller, prep: PreparedExecution, sink?: StreamSink): Promise<ExecutionReply | null> {
  const stream = prep.mode === 'stream' && sink !== undefined;
  const input: ExecutionInput = {
    executionId: newId('exec_req'),
    permitId: newId('permit'),
    projectId: caller.projectId,
    route: prep.route,
    mode: prep.mode,
    createdAt: deps.clock.now().toISOString(),
    request: prep.request,
    routing: prep.routing,
    workflowIntentId: caller.workflowId,
    idempotencyKey: caller.idempotencyKey,
    keyId: caller.keyId,
    dispatchTimeoutMs: dispatchTimeoutMs(deps.config, prep.routing),
    heartbeatTimeoutMs: 0,
  };
  if (prep.resolved) input.resolved = prep.resolved;
  const { permitId, executionId } = input;
  let retryAfter: number | undefined;
  const reply = (env: ExecutionEnvelope): ExecutionReply => ({ status: env.status_code, headers: responseHeaders(env, permitId, retryAfter), body: env });
  const primaryRequest = normalizedRequest(input, prep.routing.primary);
  const tools = executionTools(primaryRequest);
  // What the targets see: the messages and text inputs, and the tool definitions of their provider options.
  const inspectable = (request: ExecutionInput['request']) => [...requestInspectable(normalizedRequest({ ...input, request }, prep.routing.primary)), ...toolDefinitionTexts(request)];
  // The firewall's `redact` action: messages, text inputs and tool definitions masked before any target sees them.
  const redaction = surfaceRedaction((r) => {
    const request = maskToolDefinitions(r, maskRequest(r, prep.request));
    return { copy: request, texts: inspectable(request) };
  });

  const surface: Surface<ExecutionReply | null> = {
    errors: executionErrors(prep.mode === 'stream'),
    scope: prep.route,
    requestHash: () => payloadHash(prep.route, prep.body, caller.workflowId),
    replay,
    // Streams are not replayed; their key only records the execution it started.
    respond: (env) => (prep.mode === 'stream' ? null : { status: env.status_code, headers: responseHeaders(env, permitId, retryAfter), body: Buffer.from(JSON.stringify(env)) }),
    onInterrupted: prep.mode === 'stream' ? 'mark_completed' : 'store_envelope',
    govern: () => ({
      request: primaryRequest,
      route: prep.route,
      inspectableText: inspectable(prep.request),
      ...(tools.length ? { tools } : {}),
      redact: redaction.redact,
      permitMetadata: { execution_id: executionId, mode: prep.mode, key_id: caller.keyId },
    }),
    governed: (gov) => {
      if (gov.retry_after_seconds !== undefined) retryAfter = Math.max(1, Math.ceil(gov.retry_after_seconds));
    },
    denied: (env) => reply(env),
    async dispatch(callInput, gov) {
      // Only the masked copy is dispatched (and recorded) when the firewall redacted.
      const masked = gov.firewall?.redacted.length ? { ...callInput, request: redaction.masked(gov.firewall.redacted) } : callInput;
      // Hard caps: every try sends the output ceiling governance set or lowered.
      const governed = withOutputCeiling(masked, gov);
      if (stream) return streamDispatch(deps, governed, sink, reply);
      const { outcome, fallbackEvents } = await deps.calls.dispatch(governed);
      return { outcome, fallbackEvents, input: governed, answer: reply };
    },
  };
  return runGovernedCall(deps, input, surface);
}

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * Stream mode. The HTTP status is decided by the first thing that happens: a delta opens the SSE
 * stream (200); a call that ends without deltas (failed before any output) is answered with the
 * JSON envelope and its status, exactly like sync mode.
 */
async function streamDispatch(
  deps: ExecutionServiceDeps,
  input: ExecutionInput,
  sink: StreamSink,
  reply: (env: ExecutionEnvelope) => ExecutionReply,
): Promise<Dispatched<ExecutionReply | null>> {
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
  let dispatched;
  try {
    dispatched = await deps.calls.dispatch(input, {
      signal: abort.signal,
      clientGone: () => clientGone,
      onDelta: (text) => {
        if (clientGone) return;
        openStream();
        sink.write(sse('delta', { delta: { type: 'output_text_delta', text } }));
      },
    });
  } catch (err) {
    unsubscribe();
    throw err;
  }
  return {
    outcome: dispatched.outcome,
    fallbackEvents: dispatched.fallbackEvents,
    input,
    done: unsubscribe,
    answer(envelope) {
      if (clientGone) return null;
      if (!open && envelope.status !== 'completed') return reply(envelope);
      openStream();
      if (envelope.status === 'completed') sink.write(sse('completion', envelope));
      else sink.write(sse('error', { error: envelope.error ?? { code: 'upstream_error', message: 'execution failed' }, execution: envelope }));
      sink.end();
      return null;
    },
  };
}
