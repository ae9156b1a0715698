/**
 * The API side of a governed execution: idempotency, workflow-intent reservation, starting the
 * executionWorkflow (eager start) and answering with its envelope, or relaying its stream as SSE.
 * Shared by POST /v1/executions and POST /v1/execute.
 */
import { createHash } from 'node:crypto';
import type { ParameterizedContext } from 'koa';
import canonicalize from 'canonicalize';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { ApiDeps } from '../api/deps';
import { ApiError, errors } from '../api/errors';
import { authOf } from '../api/middleware/auth';
import { findExecutionById } from '../db/repositories/executions';
import { claimIdempotencyKey, completeIdempotencyKey, releaseIdempotencyKey } from '../db/repositories/idempotency';
import { newId } from '../ids';
import { reservationDenial } from './reservation-denial';
import { SA } from '../../workflows/search-attributes';
import type { ExecutionEnvelope, ExecutionRoute } from './envelope';
import { controlChannel, RelayMessage, streamChannel } from './stream-relay';
import { WORKFLOW_ID_PATTERN } from './schema';
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

/** Heartbeat timeout of the dispatch activity: how fast a dead worker is noticed mid-call. */
const heartbeatTimeoutMs = () => Number(process.env.TOLLGATE_DISPATCH_HEARTBEAT_MS ?? 10_000);
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

function payloadHash(route: string, body: unknown, workflowId: string | null): string {
  return createHash('sha256')
    .update(canonicalize({ route, body, workflow_id: workflowId }) as string)
    .digest('hex');
}

function respondEnvelope(ctx: ParameterizedContext, env: ExecutionEnvelope, permitId: string | null, retryAfter?: number): void {
  ctx.status = env.status_code;
  if (permitId) ctx.set('x-svc-permit-id', permitId);
  if (env.status_code === 429 && retryAfter !== undefined) ctx.set('retry-after', String(retryAfter));
  ctx.body = env;
}

async function retryAfterOf(deps: ApiDeps, projectId: string, permitId: string): Promise<number | undefined> {
  const { rows } = await deps.db.query<{ r: unknown }>(
    `SELECT decision_details->'retry_after_seconds' AS r FROM permits WHERE project_id = $1 AND id = $2`,
    [projectId, permitId],
  );
  const r = Number(rows[0]?.r);
  return Number.isFinite(r) && r > 0 ? Math.ceil(r) : 1;
}

/** Waits for a workflow started by another request (same Idempotency-Key) and its stored record. */
async function joinExecution(deps: ApiDeps, projectId: string, executionId: string): Promise<{ envelope: ExecutionEnvelope; permitId: string | null }> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const stored = await findExecutionById(deps.db, executionId);
    if (stored && stored.project_id === projectId) return { envelope: stored.envelope, permitId: stored.permit_id };
    try {
      await deps.temporal.client.workflow.getHandle(executionId).result();
    } catch (err) {
      // Not started yet (the first request is between its claim and its start): look again shortly.
      if (!(err instanceof WorkflowNotFoundError) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

export async function runExecution(ctx: ParameterizedContext, deps: ApiDeps, prep: PreparedExecution): Promise<void> {
  const auth = authOf(ctx);
  const workflowHeader = ctx.get('x-svc-workflow-id') || null;
  if (workflowHeader !== null && !WORKFLOW_ID_PATTERN.test(workflowHeader)) {
    throw errors.validation([{ path: 'headers.x-svc-workflow-id', message: 'X-Svc-Workflow-Id must be 1 to 255 characters of [A-Za-z0-9_-]', code: 'invalid_format' }]);
  }
  const key = ctx.get('idempotency-key') || null;
  if (key !== null && !IDEMPOTENCY_KEY_PATTERN.test(key)) {
    throw errors.validation([{ path: 'headers.idempotency-key', message: 'Idempotency-Key must be 1 to 255 visible ASCII characters', code: 'invalid_format' }]);
  }
  const stream = prep.mode === 'stream';
  const executionId = newId('exec_req');
  const permitId = newId('permit');
  const scope = prep.route;

  if (key) {
    const claim = await claimIdempotencyKey(deps.db, {
      projectId: auth.projectId,
      scope,
      key,
      requestHash: payloadHash(prep.route, prep.body, workflowHeader),
      resourceId: executionId,
      retentionHours: deps.config.idempotencyRetentionHours,
    });
    if (claim.outcome === 'conflict') throw errors.idempotencyConflict(key);
    if (claim.outcome !== 'claimed') {
      if (stream) {
        throw errors.conflict('idempotency_stream_not_replayable', 'This Idempotency-Key was already used for a stream; streams are not replayed and the call is not repeated', {
          idempotency_key: key,
          execution_id: claim.resourceId,
        });
      }
      ctx.set('idempotent-replayed', 'true');
      if (claim.outcome === 'completed' && claim.response) {
        ctx.status = claim.response.status;
        for (const [k, v] of Object.entries(claim.response.headers)) ctx.set(k, v);
        ctx.type = 'application/json';
        ctx.body = claim.response.body;
        return;
      }
      const joined = await joinExecution(deps, auth.projectId, claim.resourceId!);
      const retry = joined.envelope.status_code === 429 && joined.permitId ? await retryAfterOf(deps, auth.projectId, joined.permitId) : undefined;
      respondEnvelope(ctx, joined.envelope, joined.permitId, retry);
      return;
    }
  }

  let started = false;
  try {
    let reservationDenied: ExecutionInput['reservationDenied'];
    if (workflowHeader) {
      const r = await deps.intentReservations.reserveCall(auth.projectId, workflowHeader);
      // Refused: denied inside the envelope (403, a permit and a timeline), with no provider call.
      if (!r.granted) reservationDenied = reservationDenial(r.reason, workflowHeader);
    }
    const input: ExecutionInput = {
      executionId,
      permitId,
      projectId: auth.projectId,
      route: prep.route,
      mode: prep.mode,
      createdAt: deps.clock.now().toISOString(),
      request: prep.request,
      routing: prep.routing,
      workflowIntentId: workflowHeader,
      idempotencyKey: key,
      dispatchTimeoutMs: deps.config.providerTimeouts.totalMs * (1 + prep.routing.fallback.length) + 15_000,
      heartbeatTimeoutMs: heartbeatTimeoutMs(),
    };
    if (prep.resolved) input.resolved = prep.resolved;
    if (reservationDenied) input.reservationDenied = reservationDenied;
    if (stream) input.relay = { stream: streamChannel(executionId), control: controlChannel(executionId) };

    const startWorkflow = async () => {
      const p = prep.routing.primary;
      const handle = await deps.temporal.client.workflow.start('executionWorkflow', {
        workflowId: executionId,
        taskQueue: deps.temporal.taskQueue,
        args: [input],
        requestEagerStart: true,
        staticSummary: `${prep.request.operation} → ${p.provider}/${p.model} (${prep.route}, ${prep.mode})`,
        staticDetails: `project ${auth.projectId} · permit ${permitId}${workflowHeader ? ` · workflow ${workflowHeader}` : ''}`,
        typedSearchAttributes: [
          { key: SA.projectId, value: auth.projectId },
          { key: SA.operation, value: prep.request.operation },
          { key: SA.provider, value: p.provider },
          { key: SA.model, value: p.model },
          { key: SA.status, value: 'running' },
          ...(workflowHeader ? [{ key: SA.intentId, value: workflowHeader }] : []),
        ],
      });
      started = true;
      return handle;
    };

    let envelope: ExecutionEnvelope;
    let responded = false;
    if (!stream) {
      const handle = await startWorkflow();
      envelope = (await handle.result()) as ExecutionEnvelope;
    } else {
      const out = await runStream(ctx, deps, input, startWorkflow);
      envelope = out.envelope;
      responded = out.responded;
    }
    const retryAfter = envelope.status_code === 429 ? await retryAfterOf(deps, auth.projectId, permitId) : undefined;
    if (!responded) respondEnvelope(ctx, envelope, permitId, retryAfter);
    if (key) {
      const headers: Record<string, string> = { 'x-svc-permit-id': permitId };
      if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
      await completeIdempotencyKey(deps.db, {
        projectId: auth.projectId,
        scope,
        key,
        resourceId: executionId,
        // Streams are not replayed; their key only records the execution it started.
        response: stream ? undefined : { status: envelope.status_code, headers, body: Buffer.from(JSON.stringify(envelope)) },
      });
    }
  } catch (err) {
    if (key && !started) await releaseIdempotencyKey(deps.db, { projectId: auth.projectId, scope, key }).catch(() => undefined);
    throw err;
  }
}

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * Stream mode. The HTTP status is decided by the first thing that happens: a delta opens the SSE
 * stream (200); a workflow that ends without deltas (denied, throttled, failed before any output)
 * is answered with the JSON envelope and its status, exactly like sync mode.
 */
async function runStream(
  ctx: ParameterizedContext,
  deps: ApiDeps,
  input: ExecutionInput,
  startWorkflow: () => Promise<{ result(): Promise<unknown> }>,
): Promise<{ envelope: ExecutionEnvelope; responded: boolean }> {
  const relay = deps.relay;
  if (!relay) throw new ApiError(500, 'internal_error', 'Streaming is not configured in this process');
  const res = ctx.res;
  let open = false;
  let clientGone = false;
  let endSeen: () => void = () => undefined;
  const ended = new Promise<void>((r) => (endSeen = r));
  const backlog: string[] = [];

  const openStream = () => {
    if (open || clientGone) return;
    open = true;
    ctx.respond = false;
    ctx.status = 200;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-svc-permit-id': input.permitId,
    });
    const p = input.routing.primary;
    res.write(
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
    for (const chunk of backlog.splice(0)) res.write(chunk);
  };

  const onMessage = (m: RelayMessage) => {
    if (m.type === 'delta') {
      if (clientGone) return;
      openStream();
      res.write(sse('delta', { delta: { type: 'output_text_delta', text: m.text } }));
    } else if (m.type === 'end') {
      endSeen();
    }
  };
  const unsubscribe = await relay.subscribe(input.relay!.stream, onMessage);
  const onClose = () => {
    if (res.writableEnded) return;
    clientGone = true;
    // Tell the dispatch activity (wherever it runs) to stop the upstream call; usage is recorded
    // from what was produced so far, flagged estimated.
    const pub = relay.publisher(input.relay!.control);
    pub.send({ type: 'abort', reason: 'client_closed' });
    pub.close().catch(() => undefined);
  };
  res.on('close', onClose);
  try {
    const handle = await startWorkflow();
    const envelope = (await handle.result()) as ExecutionEnvelope;
    if (envelope.status !== 'denied') {
      // Deltas travel by NOTIFY, the result by Temporal: let the relay catch up before closing.
      await Promise.race([ended, new Promise((r) => setTimeout(r, 2000))]);
    }
    if (clientGone) return { envelope, responded: true };
    if (!open && envelope.status !== 'completed') return { envelope, responded: false };
    openStream();
    if (envelope.status === 'completed') res.write(sse('completion', envelope));
    else res.write(sse('error', { error: envelope.error ?? { code: 'upstream_error', message: 'execution failed' }, execution: envelope }));
    res.end();
    return { envelope, responded: true };
  } finally {
    res.off('close', onClose);
    await unsubscribe().catch(() => undefined);
  }
}
