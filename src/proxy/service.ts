/**
 * POST /v1/proxy/{provider}/<native path>: a governed provider call that keeps the provider's wire
 * format. Runs in the API process (no Temporal workflow; see docs/decisions.md#proxies):
 *
 *   authenticate (key where the provider's SDK sends it) → read the raw body → infer operation and
 *   model → routing headers → Idempotency-Key claim → governance + prompt firewall (permit) →
 *   dispatch: the native body byte for byte (Tollgate's credentials), or translated for a
 *   cross-provider target → the native response / SSE stream back unchanged, usage extracted on
 *   the way → recordExecution (the executions path's recording: envelope row, spend settle or
 *   release, timeline events) → idempotency completion.
 */
import { createHash } from 'node:crypto';
import type { ParameterizedContext } from 'koa';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { ApiDeps } from '../api/deps';
import { ApiError } from '../api/errors';
import { jsonDepth, MAX_JSON_DEPTH } from '../api/json-depth';
import { authenticate, authOf, type KeyExtractor } from '../api/middleware/auth';
import type { ProviderId } from '../config';
import { claimIdempotencyKey, releaseIdempotencyKey, type StoredResponse } from '../db/repositories/idempotency';
import type { IdempotencyCompletion } from '../executions/record';
import { dispatchWithFallback } from '../pipeline/fallback';
import { reservationDenial } from '../executions/reservation-denial';
import { WORKFLOW_ID_PATTERN } from '../executions/schema';
import { IDEMPOTENCY_KEY_PATTERN } from '../executions/service';
import type { Target } from '../executions/routing';
import type { DispatchOutcome, ExecutionInput, GovernOutcome } from '../executions/types';
import { newId } from '../ids';
import { providerModules, type SseEvent } from '../providers';
import { estimatedUsage, makeUsage, requestTexts } from '../providers/shared/usage';
import { ProviderError, type NormalizedRequest, type ProviderFailure, type ProviderResult, type Usage } from '../providers/types';
import { inferCall, multipartFields, type ParsedBody, type ProxyCall } from './infer';
import { nativeErrorBody, ProxyError } from './native-errors';
import { renderNative, translatedRequest } from './translate';
import { forwardRequestHeaders, passBackHeaders, type UpstreamClient } from './upstream';
import { PERMIT_LEASE_KEY } from '../../workflows/intent-messages';

export const PROXY_PROVIDERS: readonly ProviderId[] = ['openai', 'anthropic', 'google', 'deepseek', 'mistral'];
/** Providers whose proxies accept the routing headers (spec: routing controls on <provider_1>, <provider_2>). */
export const ROUTABLE_PROVIDERS: readonly ProviderId[] = ['openai', 'anthropic'];

export interface ProxyDeps {
  api: ApiDeps;
  /** Pass-through connection pools (native bytes to the provider). */
  upstream: UpstreamClient;
}

const POLL_MS = 50;

// ---------------------------------------------------------------------------------------------
// Authentication: the project API key where each provider's SDK puts its own key.

const bearer = (ctx: ParameterizedContext): string | null => {
  const h = ctx.get('authorization');
  if (!h) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1] : '';
};

export const PROXY_KEY_EXTRACTORS: Record<ProviderId, KeyExtractor> = {
  openai: bearer,
  deepseek: bearer,
  mistral: bearer,
  anthropic: (ctx) => ctx.get('x-api-key') || bearer(ctx),
  google: (ctx) => ctx.get('x-goog-api-key') || (typeof ctx.query.key === 'string' && ctx.query.key) || bearer(ctx),
};

const AUTH_HINT: Record<ProviderId, string> = {
  openai: 'Send the Tollgate project API key as "Authorization: Bearer <key>"',
  deepseek: 'Send the Tollgate project API key as "Authorization: Bearer <key>"',
  mistral: 'Send the Tollgate project API key as "Authorization: Bearer <key>"',
  anthropic: 'Send the Tollgate project API key in the "x-api-key" header',
  google: 'Send the Tollgate project API key in the "x-goog-api-key" header or the "key" query parameter',
};

export async function authenticateNative(ctx: ParameterizedContext, deps: ProxyDeps, provider: ProviderId): Promise<void> {
  try {
    await authenticate(deps.api.keys, { extract: PROXY_KEY_EXTRACTORS[provider] })(ctx, async () => undefined);
  } catch (err) {
    if (err instanceof ApiError) {
      const message = err.code === 'authentication_required' ? `${AUTH_HINT[provider]}` : err.message;
      throw new ProxyError(err.status, err.code, message, err.status === 401 ? { 'www-authenticate': 'Bearer' } : {});
    }
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// Request body and idempotency hash.

async function readRaw(ctx: ParameterizedContext, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of ctx.req) {
    size += (c as Buffer).length;
    if (size > limit) throw new ProxyError(413, 'payload_too_large', `The request body exceeds ${limit} bytes`);
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

async function parseBody(ctx: ParameterizedContext, limit: number): Promise<ParsedBody> {
  const raw = await readRaw(ctx, limit);
  const contentType = ctx.get('content-type');
  if (/^multipart\/form-data/i.test(contentType)) {
    try {
      return { kind: 'multipart', raw, contentType, json: await multipartFields(raw, contentType) };
    } catch {
      throw new ProxyError(400, 'invalid_multipart', 'The multipart body could not be parsed');
    }
  }
  if (raw.length && !/json/i.test(contentType) && contentType) {
    throw new ProxyError(415, 'unsupported_media_type', 'Send the native request as JSON (or multipart/form-data where the provider takes it)');
  }
  let json: unknown;
  try {
    json = raw.length ? JSON.parse(raw.toString('utf8')) : {};
  } catch {
    throw new ProxyError(400, 'invalid_json', 'The request body is not valid JSON');
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) throw new ProxyError(400, 'invalid_json', 'The request body must be a JSON object');
  if (jsonDepth(json) > MAX_JSON_DEPTH) throw new ProxyError(400, 'invalid_json', `The request body nests deeper than ${MAX_JSON_DEPTH} levels`);
  return { kind: 'json', raw, contentType, json: json as Record<string, unknown> };
}

/** Multipart boundaries are random per request: hash the body with its boundary normalized. */
function payloadHash(provider: ProviderId, path: string, body: ParsedBody, routingHeaders: Record<string, string>): string {
  const h = createHash('sha256').update(`${provider}\n${path}\n${JSON.stringify(routingHeaders)}\n`);
  if (body.kind === 'multipart') {
    const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(body.contentType);
    const b = boundary ? (boundary[1] ?? boundary[2]).trim() : '';
    h.update(b ? body.raw.toString('latin1').split(b).join('BOUNDARY') : body.raw.toString('latin1'));
  } else {
    h.update(body.raw);
  }
  return h.digest('hex');
}

// ---------------------------------------------------------------------------------------------
// Routing headers (openai and anthropic proxies).

function parseTarget(spec: string, where: string): Target {
  const m = /^\s*(openai|anthropic)\s*[:/]\s*(\S+)\s*$/.exec(spec);
  if (!m) throw new ProxyError(400, 'invalid_routing', `${where}: "${spec}" is not "<provider>:<model>" with provider openai or anthropic`);
  return { provider: m[1] as ProviderId, model: m[2] };
}

interface RoutingPlan {
  primary: Target;
  fallback: Target[];
  reason: 'explicit_request';
  requested: { provider: ProviderId; model: string };
  headers: Record<string, string>;
}

function planRouting(ctx: ParameterizedContext, call: ProxyCall): RoutingPlan {
  const tp = ctx.get('x-svc-target-provider').trim();
  const tm = ctx.get('x-svc-target-model').trim();
  const chain = ctx.get('x-svc-fallback-chain').trim();
  const headers: Record<string, string> = {};
  if (tp) headers.provider = tp;
  if (tm) headers.model = tm;
  if (chain) headers.chain = chain;
  const requested = { provider: call.provider, model: call.model };
  if (!tp && !tm && !chain) return { primary: requested, fallback: [], reason: 'explicit_request', requested, headers };
  if (!ROUTABLE_PROVIDERS.includes(call.provider)) {
    throw new ProxyError(400, 'routing_not_supported', `Routing headers are supported on the openai and anthropic proxies only, not on ${call.provider}`);
  }
  if (!call.chat) throw new ProxyError(400, 'routing_not_supported', 'Routing headers apply to chat requests only');
  let primary = requested;
  if (tp || tm) {
    if (tp && !ROUTABLE_PROVIDERS.includes(tp as ProviderId)) throw new ProxyError(400, 'invalid_routing', 'x-svc-target-provider must be openai or anthropic');
    const provider = (tp || call.provider) as ProviderId;
    if (provider !== call.provider && !tm) throw new ProxyError(400, 'invalid_routing', 'x-svc-target-model is required when x-svc-target-provider names another provider');
    primary = { provider, model: tm || call.model };
  }
  const fallback = chain
    ? chain
        .split(',')
        .filter((s) => s.trim())
        .map((s) => parseTarget(s, 'x-svc-fallback-chain'))
        .filter((t) => !(t.provider === primary.provider && t.model === primary.model))
    : [];
  const crossProvider = [primary, ...fallback].some((t) => t.provider !== call.provider);
  if (call.stream && (crossProvider || fallback.length)) {
    throw new ProxyError(400, 'routing_not_supported', 'Cross-provider targets and fallback chains are non-stream only; send the request without "stream": true');
  }
  return { primary, fallback, reason: 'explicit_request', requested, headers };
}

// ---------------------------------------------------------------------------------------------
// Responses.

export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

function jsonReply(status: number, body: unknown, headers: Record<string, string> = {}): Reply {
  return { status, headers: { 'content-type': 'application/json', ...headers }, body: Buffer.from(JSON.stringify(body)) };
}

export function send(ctx: ParameterizedContext, r: Reply): void {
  ctx.status = r.status;
  for (const [k, v] of Object.entries(r.headers)) ctx.set(k, v);
  ctx.body = r.body;
  if (r.headers['content-type']) ctx.type = r.headers['content-type'];
}

export function proxyErrorReply(provider: ProviderId, err: ProxyError): Reply {
  return jsonReply(err.status, nativeErrorBody(provider, err.status, err.code, err.message, err.extra), err.headers);
}

/** Replays a stored response: status, the headers that matter, and the body (an SSE body is replayed whole). */
function replay(ctx: ParameterizedContext, stored: StoredResponse): void {
  send(ctx, { status: stored.status, headers: { ...stored.headers, 'idempotent-replayed': 'true' }, body: stored.body });
}

/** Stored responses: everything except throttles and Tollgate/upstream-side failures (>= 500), which are retryable. */
const cacheable = (status: number) => status < 500 && status !== 429;
const STORED_HEADERS = ['content-type', 'x-svc-permit-id', 'x-svc-request-id', 'retry-after', 'x-svc-selected-provider', 'x-svc-selected-model', 'x-svc-fallback-occurred'];
const storedHeaders = (h: Record<string, string>) => Object.fromEntries(STORED_HEADERS.filter((k) => h[k] !== undefined).map((k) => [k, h[k]]));

// ---------------------------------------------------------------------------------------------

interface Attempt {
  ok: boolean;
  failure?: ProviderFailure;
  partial?: Usage | null;
  /** A non-stream answer (native bytes) to return to the caller. */
  reply?: Reply;
  usage?: Usage;
  /** A stream was piped to the caller (already responded). */
  streamed?: boolean;
  aborted?: boolean;
  /** Ends the piped stream; called after recording, so the record exists once the caller sees the end. */
  finish?: () => void;
  /** Set by the fallback engine's adapter: no other target after this one. */
  final?: boolean;
}

export async function handleProxy(ctx: ParameterizedContext, deps: ProxyDeps, provider: ProviderId, nativePath: string): Promise<void> {
  const { db, config, logger } = deps.api;
  const permitId = newId('permit');
  const executionId = newId('exec_req');
  let claimedKey: string | null = null;
  let projectId: string | null = null;
  /** Set once governance wrote the permit: only then does a Tollgate error name it. */
  const state = { governed: false };
  try {
    await authenticateNative(ctx, deps, provider);
    const auth = authOf(ctx);
    projectId = auth.projectId;
    const body = await parseBody(ctx, config.bodyLimitBytes);
    const query = new URLSearchParams(ctx.querystring);
    query.delete('key');
    const qs = query.toString();
    const path = nativePath + (qs ? `?${qs}` : '');
    const call = inferCall(provider, path, body);
    const plan = planRouting(ctx, call);
    const workflowId = ctx.get('x-svc-workflow-id') || null;
    if (workflowId !== null && !WORKFLOW_ID_PATTERN.test(workflowId)) {
      throw new ProxyError(400, 'invalid_workflow_id', 'X-Svc-Workflow-Id must be 1 to 255 characters of [A-Za-z0-9_-]');
    }

    const key = ctx.get('idempotency-key') || null;
    if (key !== null && !IDEMPOTENCY_KEY_PATTERN.test(key)) throw new ProxyError(400, 'invalid_idempotency_key', 'Idempotency-Key must be 1 to 255 visible ASCII characters');
    if (key) {
      const scope = `proxy:${provider}`;
      const hash = payloadHash(provider, path, body, workflowId ? { ...plan.headers, workflow_id: workflowId } : plan.headers);
      const deadline = Date.now() + config.providerTimeouts.totalMs * (1 + plan.fallback.length) + 10_000;
      for (;;) {
        const claim = await claimIdempotencyKey(db, { projectId, scope, key, requestHash: hash, resourceId: executionId, retentionHours: config.idempotencyRetentionHours });
        if (claim.outcome === 'claimed') break;
        if (claim.outcome === 'conflict') {
          throw new ProxyError(409, 'idempotency_conflict', 'This Idempotency-Key was already used with a different request payload', {}, { idempotency_key: key });
        }
        if (claim.outcome === 'completed') {
          if (claim.response) return replay(ctx, claim.response);
          throw new ProxyError(409, 'idempotency_conflict', 'This Idempotency-Key was used by a request whose response is not replayable', {}, { idempotency_key: key });
        }
        // In flight: wait for the first request to finish, then replay its response.
        if (Date.now() > deadline) {
          throw new ProxyError(409, 'idempotency_in_flight', 'A request with this Idempotency-Key is still in flight', {}, { idempotency_key: key });
        }
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
      claimedKey = key;
    }

    // Recording completes (or releases) the claimed key in the same statement.
    const { reply, sent } = await governAndDispatch(ctx, deps, call, plan, body, projectId, permitId, executionId, key, workflowId, state);
    claimedKey = null;
    if (reply && !sent) send(ctx, reply);
  } catch (err) {
    if (claimedKey && projectId) await releaseIdempotencyKey(db, { projectId, scope: `proxy:${provider}`, key: claimedKey }).catch(() => undefined);
    if (ctx.respond === false || ctx.headerSent) {
      logger.warn({ err }, 'proxy call failed after its response started');
      return;
    }
    const pe = err instanceof ProxyError ? err : null;
    if (!pe) logger.error({ err, provider }, 'proxy call failed');
    const e = pe ?? new ProxyError(500, 'internal_error', 'An internal error occurred; retry later');
    send(ctx, proxyErrorReply(provider, e));
    if (projectId) ctx.set('x-svc-request-id', executionId);
    if (state.governed) ctx.set('x-svc-permit-id', permitId);
  }
}

/** Governance, dispatch and recording. Returns the reply (for the caller and the idempotency store); `sent` when a stream already answered. */
async function governAndDispatch(
  ctx: ParameterizedContext,
  deps: ProxyDeps,
  call: ProxyCall,
  plan: RoutingPlan,
  body: ParsedBody,
  projectId: string,
  permitId: string,
  executionId: string,
  idempotencyKey: string | null,
  workflowId: string | null,
  state: { governed: boolean },
): Promise<{ reply: Reply | null; sent: boolean }> {
  const { clock, calls } = deps.api;
  const route = `proxy:${call.provider}`;
  const input: ExecutionInput = {
    executionId,
    permitId,
    projectId,
    route: 'proxy',
    mode: call.stream ? 'stream' : 'sync',
    createdAt: clock.now().toISOString(),
    request: call.request,
    routing: { requested_provider: plan.requested.provider, requested_model: plan.requested.model, reason_code: plan.reason, primary: plan.primary, fallback: plan.fallback },
    workflowIntentId: workflowId,
    idempotencyKey,
    dispatchTimeoutMs: deps.api.config.providerTimeouts.totalMs * (1 + plan.fallback.length) + 5_000,
    heartbeatTimeoutMs: 0,
  };
  const tollgateHeaders: Record<string, string> = { 'x-svc-permit-id': permitId, 'x-svc-request-id': executionId };
  const normalizedFor = (t: Target): NormalizedRequest => ({ ...translatedRequest(call, t), stream: call.stream, ...(call.request.providerOptions?.[t.provider] ? { providerOptions: call.request.providerOptions[t.provider] } : {}) });
  // The reply the caller gets is what an idempotent retry replays (throttles and >= 500 are not kept).
  let finalReply: Reply | null = null;
  const idempotency: IdempotencyCompletion | undefined = idempotencyKey
    ? { scope: route, key: idempotencyKey, respond: () => (finalReply && cacheable(finalReply.status) ? { status: finalReply.status, headers: storedHeaders(finalReply.headers), body: finalReply.body } : 'release') }
    : undefined;

  const denied = (gov: GovernOutcome): Reply => {
    const status = gov.decision === 'throttle' ? 429 : 403;
    const headers: Record<string, string> = { ...tollgateHeaders };
    if (status === 429) headers['retry-after'] = String(Math.max(1, Math.ceil(gov.retry_after_seconds ?? 1)));
    const message = gov.decision === 'review' ? `${gov.display_reason} (${gov.reason_code}; the request needs human review)` : gov.display_reason;
    return jsonReply(status, nativeErrorBody(call.provider, status, gov.reason_code, message, { decision: gov.decision, permit_id: permitId }), headers);
  };
  // A call attributed to a workflow intent first reserves one call against its ceiling (from this
  // process's lease; the lease id goes into the permit).
  let intentLease: string | undefined;
  if (workflowId) {
    const r = await deps.api.intentReservations.reserveCall(projectId, workflowId);
    if (!r.granted) input.reservationDenied = reservationDenial(r.reason, workflowId);
    else if (r.lease) intentLease = r.lease;
  }
  const { estimatedInputTokens: _est, ...gov } = await calls.govern({
    input,
    request: normalizedFor(plan.primary),
    route,
    inspectableText: call.inspectable,
    permitMetadata: { execution_id: executionId, mode: input.mode, proxy: call.provider, native_path: call.pathname, ...(intentLease ? { [PERMIT_LEASE_KEY]: intentLease } : {}) },
    inProcess: {
      routingMeta: { route },
      startedMeta: { native_path: call.pathname },
      ...(idempotencyKey ? { idempotency: { scope: route, key: idempotencyKey, onInterrupted: 'release' as const } } : {}),
    },
  });
  state.governed = true;
  if (gov.decision !== 'allow') {
    finalReply = denied(gov);
    await calls.record(input, { kind: 'governed_out', gov }, { idempotency });
    return { reply: finalReply, sent: false };
  }

  const abort = new AbortController();
  const onClose = () => {
    if (!ctx.res.writableFinished) abort.abort();
  };
  ctx.res.on('close', onClose);
  let run;
  try {
    run = await dispatchWithFallback<Attempt>(input, [plan.primary, ...plan.fallback], clock, async (target, i) => {
      const routingHeaders: Record<string, string> = plan.headers.provider || plan.headers.model || plan.headers.chain ? { 'x-svc-selected-provider': target.provider, 'x-svc-selected-model': target.model, 'x-svc-fallback-occurred': String(i > 0) } : {};
      const extraHeaders = { ...tollgateHeaders, ...routingHeaders };
      const a =
        target.provider === call.provider
          ? await passThrough(ctx, deps, call, body, target, normalizedFor(target), extraHeaders, abort.signal)
          : await translated(deps, call, target, abort.signal, extraHeaders);
      return { ...a, final: Boolean(a.streamed || a.aborted) };
    }, { stream: call.stream, signal: abort.signal });
  } finally {
    ctx.res.off('close', onClose);
  }
  const { last: attempt, target, attempts, fallbackOccurred } = run;
  let outcome: DispatchOutcome;
  if (attempt.ok) {
    const result: ProviderResult = { output: { content: [] }, output_assets: [], usage: attempt.usage!, finish_reason: null };
    outcome = { ok: true, target, result, attempts, fallbackOccurred };
  } else {
    const { native: _native, ...failure } = attempt.failure!;
    outcome = {
      ok: false,
      kind: attempt.aborted ? 'aborted' : 'provider',
      target,
      failure: attempt.aborted ? { ...failure, kind: 'aborted', message: 'client disconnected' } : failure,
      partialUsage: attempt.partial ?? null,
      attempts,
      fallbackOccurred,
    };
  }
  finalReply = attempt.reply ?? null;
  try {
    await calls.record(input, { kind: 'dispatched', gov, outcome }, { idempotency, fallbackEvents: run.events });
  } finally {
    attempt.finish?.();
  }
  return { reply: attempt.reply ?? null, sent: Boolean(attempt.streamed) };
}

/** Usage of a non-stream native response; tokenizer estimate when the provider reports none. */
function usageOfNative(call: ProxyCall, req: NormalizedRequest, json: unknown): Usage {
  const u = providerModules[call.provider].extractUsageFromNative(call.pathname, json);
  if (u) return u;
  if (call.operation === 'generate.audio') return makeUsage({ characters: requestTexts(req).join('\n').length });
  if (call.operation === 'embed.text') return { ...estimatedUsage(req, ''), output_tokens: 0 };
  return estimatedUsage(req, '');
}

function failureOf(err: unknown, signal: AbortSignal): ProviderFailure {
  if (err instanceof ProviderError) return err.failure;
  if (signal.aborted) return { kind: 'aborted', status: null, retryable: false, message: 'request aborted by the caller' };
  const code = (err as { code?: string })?.code;
  const timeout = code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || (err as Error)?.name === 'TimeoutError';
  return { kind: timeout ? 'timeout' : 'network', status: null, retryable: true, message: `${timeout ? 'timeout' : 'network error'}${code ? ` (${code})` : ''} talking to the provider` };
}

/** The native body, byte for byte (model replaced when a same-provider target model is set), to the provider. */
async function passThrough(
  ctx: ParameterizedContext,
  deps: ProxyDeps,
  call: ProxyCall,
  body: ParsedBody,
  target: Target,
  req: NormalizedRequest,
  extraHeaders: Record<string, string>,
  clientSignal: AbortSignal,
): Promise<Attempt> {
  const endpoint = deps.api.config.providers[call.provider];
  if (!endpoint?.apiKey || !endpoint.baseUrl) {
    const failure: ProviderFailure = { kind: 'http_error', status: null, retryable: false, message: `provider ${call.provider} has no API key configured` };
    return { ok: false, failure, reply: jsonReply(502, nativeErrorBody(call.provider, 502, 'provider_not_configured', failure.message), extraHeaders) };
  }
  let bytes = body.raw;
  if (target.model !== call.model && body.kind === 'json') bytes = Buffer.from(JSON.stringify({ ...body.json, model: target.model }));
  const timeout = AbortSignal.timeout(deps.api.config.providerTimeouts.totalMs);
  const signal = AbortSignal.any([clientSignal, timeout]);
  const mod = providerModules[call.provider];
  let res;
  try {
    res = await deps.upstream.send({ provider: call.provider, baseUrl: endpoint.baseUrl, apiKey: endpoint.apiKey, path: call.path, headers: forwardRequestHeaders(ctx.req.headers), body: bytes, signal });
  } catch (err) {
    const failure = failureOf(err, clientSignal);
    if (clientSignal.aborted) return { ok: false, aborted: true, failure, partial: null };
    return { ok: false, failure, reply: jsonReply(502, nativeErrorBody(call.provider, 502, 'upstream_unreachable', `The provider could not be reached: ${failure.message}`), extraHeaders) };
  }
  const headers = { ...passBackHeaders(res.headers), ...extraHeaders };
  const contentType = String(res.headers['content-type'] ?? '');
  if (res.statusCode < 400 && contentType.includes('text/event-stream')) {
    return pipeStream(ctx, call, req, res, headers, clientSignal);
  }
  let buf: Buffer;
  try {
    buf = Buffer.from(await res.body.arrayBuffer());
  } catch (err) {
    const failure = failureOf(err, clientSignal);
    if (clientSignal.aborted) return { ok: false, aborted: true, failure, partial: estimatedUsage(req, '') };
    return { ok: false, failure, partial: estimatedUsage(req, ''), reply: jsonReply(502, nativeErrorBody(call.provider, 502, 'upstream_error', `The provider response broke off: ${failure.message}`), extraHeaders) };
  }
  let json: unknown = null;
  if (contentType.includes('json')) {
    try {
      json = JSON.parse(buf.toString('utf8'));
    } catch {
      json = buf.toString('utf8');
    }
  }
  const reply: Reply = { status: res.statusCode, headers, body: buf };
  if (res.statusCode >= 400) return { ok: false, failure: mod.mapError(res.statusCode, json ?? buf.toString('utf8').slice(0, 2000), res.headers), partial: null, reply };
  return { ok: true, usage: usageOfNative(call, req, json), reply };
}

/** Pipes a native SSE stream to the caller unchanged, extracting usage from the events on the way. */
async function pipeStream(
  ctx: ParameterizedContext,
  call: ProxyCall,
  req: NormalizedRequest,
  res: { statusCode: number; body: AsyncIterable<unknown> & { destroy(err?: Error): unknown } },
  headers: Record<string, string>,
  clientSignal: AbortSignal,
): Promise<Attempt> {
  const mod = providerModules[call.provider];
  const events: SseEvent[] = [];
  const parser = mod.createStreamParser(req);
  let text = '';
  let streamError: unknown = null;
  const sse = createParser({
    onEvent: (e: EventSourceMessage) => {
      const ev = { event: e.event, data: e.data };
      events.push(ev);
      try {
        for (const d of parser.push(ev)) text += d;
      } catch (err) {
        streamError ??= err;
      }
    },
  });
  const decoder = new TextDecoder();
  ctx.respond = false;
  const out = ctx.res;
  out.writeHead(res.statusCode, { ...headers, 'cache-control': headers['cache-control'] ?? 'no-cache', 'x-accel-buffering': 'no' });
  out.flushHeaders();
  const captured: Buffer[] = [];
  let broken: unknown = null;
  try {
    for await (const chunk of res.body) {
      const b = chunk as Buffer;
      captured.push(b);
      if (!out.destroyed) out.write(b);
      sse.feed(decoder.decode(b, { stream: true }));
    }
    sse.feed(decoder.decode());
  } catch (err) {
    broken = err;
  }
  const usage = mod.extractStreamUsage(events);
  const partial = () => ({ ...(usage ?? estimatedUsage(req, text)), estimated: true });
  if (clientSignal.aborted) {
    out.destroy();
    return { ok: false, aborted: true, streamed: true, failure: { kind: 'aborted', status: null, retryable: false, message: 'client disconnected' }, partial: partial() };
  }
  if (broken) {
    // Pass the break on: the caller's SDK sees a stream cut short, as it would from the provider.
    out.destroy();
    return { ok: false, streamed: true, failure: { kind: 'stream_broken', status: res.statusCode, retryable: true, message: 'provider stream broke before it finished' }, partial: partial() };
  }
  const finish = () => out.end();
  const body = Buffer.concat(captured);
  const reply: Reply = { status: res.statusCode, headers, body };
  if (streamError || !parser.snapshot().done) {
    const failure: ProviderFailure = { kind: 'stream_broken', status: res.statusCode, retryable: true, message: streamError ? 'provider sent an error event in the stream' : 'provider stream ended before its final event' };
    return { ok: false, streamed: true, failure, partial: partial(), finish };
  }
  return { ok: true, streamed: true, usage: usage ?? estimatedUsage(req, text), reply, finish };
}

/** A cross-provider target: normalized request through the target's module, rendered back in the caller's shape. */
async function translated(deps: ProxyDeps, call: ProxyCall, target: Target, signal: AbortSignal, extraHeaders: Record<string, string>): Promise<Attempt> {
  const req = translatedRequest(call, target);
  try {
    const result = await deps.api.providers.dispatch(req, { signal });
    const body = renderNative(call.provider, target, result, Math.floor(deps.api.clock.now().getTime() / 1000));
    return { ok: true, usage: result.usage, reply: jsonReply(200, body, extraHeaders) };
  } catch (err) {
    const failure = failureOf(err, signal);
    const partial = err instanceof ProviderError ? err.partialUsage ?? null : null;
    if (signal.aborted) return { ok: false, aborted: true, failure, partial };
    const status = failure.status && failure.status >= 400 && failure.status < 500 && failure.status !== 429 ? failure.status : 502;
    return { ok: false, failure, partial, reply: jsonReply(status, nativeErrorBody(call.provider, status, 'upstream_error', `${target.provider}/${target.model}: ${failure.message}`), extraHeaders) };
  }
}
