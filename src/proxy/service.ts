/**
 * POST /v1/proxy/{provider}/<native path>: a governed provider call that keeps the provider's wire
 * format. Runs in the API process (no Temporal workflow; see docs/decisions/proxies.md):
 *
 *   authenticate (key where the provider's SDK sends it) → read the raw body → infer operation and
 *   model → routing headers → Idempotency-Key claim → governance + prompt firewall (permit) →
 *   dispatch: the native body byte for byte (Tollgate's credentials), or translated for a
 *   cross-provider target → the native response / SSE stream back unchanged, usage extracted on
 *   the way → recordCall (the executions path's recording: call record, spend settle or
 *   release, timeline events) → idempotency completion.
 *
 * Parts: request.ts (the request as the HTTP side hands it over, body, idempotency hash, routing
 * headers), attempts.ts (pass-through, streams, translation), reply.ts (native replies), sink.ts
 * (where a stream goes). Authentication, reading the connection and writing the response are the
 * HTTP side's (src/api/routes/proxy.ts, src/api/proxy/).
 */
import type { ProviderId } from '../config';
import { dispatchWithFallback } from '../pipeline/fallback';
import { providerAttempt } from '../telemetry/gen-ai';
import { checkCallHeaders, dispatchTimeoutMs, runGovernedCall, type Surface, type SurfaceErrors } from '../pipeline/governed-call';
import type { Target } from '../executions/types';
import type { DispatchOutcome, ExecutionInput, GovernOutcome } from '../executions/types';
import { newId } from '../ids';
import type { NormalizedRequest, ProviderResult } from '../providers/types';
import { inferCall, type ParsedBody, type ProxyCall } from './infer';
import { withOutputCeiling } from '../executions/output-ceiling';
import { nativeErrorBody, ProxyError } from './native-errors';
import { translatedRequest } from './translate';
import { FIREWALL_HEADER, GOVERNANCE_ACTIONS_HEADER, type ProxyDeps } from './deps';
import { firewallHeader, surfaceRedaction } from '../governance/firewall';
import { headerOf, parseBody, payloadHash, planRouting, readCallBody, type ProxyRequest, type RoutingPlan } from './request';
import { jsonReply, proxyErrorReply, replayReply, cacheable, storedHeaders, type Outgoing, type Reply } from './reply';
import type { StreamSink } from './sink';
import { passThrough, translated, type Attempt } from './attempts';

export { PROXY_PROVIDERS, type ProxyDeps } from './deps';

/** Runs one governed proxy call; what to send back, or null when the answer already went out through `sink`. */
export async function handleProxy(deps: ProxyDeps, provider: ProviderId, request: ProxyRequest, sink: StreamSink): Promise<Outgoing | null> {
  const { config, logger } = deps;
  const permitId = newId('permit');
  const executionId = newId('exec_req');
  let projectId: string | null = null;
  /** Set once governance wrote the permit: only then does a Tollgate error name it. */
  const state = { governed: false };
  try {
    const auth = await request.authenticate();
    projectId = auth.projectId;
    const body = await parseBody(await readCallBody(request, config.bodyLimitBytes), headerOf(request.headers, 'content-type'));
    const query = new URLSearchParams(request.querystring);
    query.delete('key');
    const qs = query.toString();
    const path = request.nativePath + (qs ? `?${qs}` : '');
    const call = inferCall(provider, path, body);
    const plan = planRouting(request.headers, call);
    const headers = checkCallHeaders({ workflowId: headerOf(request.headers, 'x-svc-workflow-id') || null, idempotencyKey: headerOf(request.headers, 'idempotency-key') || null }, PROXY_ERRORS);
    const input: ExecutionInput = {
      executionId,
      permitId,
      projectId,
      route: 'proxy',
      mode: call.stream ? 'stream' : 'sync',
      createdAt: deps.clock.now().toISOString(),
      request: call.request,
      routing: { requested_provider: plan.requested.provider, requested_model: plan.requested.model, reason_code: plan.reason, primary: plan.primary, fallback: plan.fallback },
      workflowIntentId: headers.workflowId,
      idempotencyKey: headers.idempotencyKey,
      keyId: auth.keyId,
      dispatchTimeoutMs: dispatchTimeoutMs(config, plan),
      heartbeatTimeoutMs: 0,
    };
    const scope = `proxy:${provider}`;
    const surface = proxySurface(deps, { request, sink }, { call, plan, body, input }, state);
    const answer = await runGovernedCall(deps, input, {
      ...surface,
      requestHash: () => payloadHash(provider, path, body, headers.workflowId ? { ...plan.headers, workflow_id: headers.workflowId } : plan.headers),
      scope,
    });
    return answer.reply && !answer.sent ? { reply: answer.reply } : null;
  } catch (err) {
    if (sink.started) {
      logger.warn({ err }, 'proxy call failed after its response started');
      return null;
    }
    const pe = err instanceof ProxyError ? err : null;
    if (!pe) logger.error({ err, provider }, 'proxy call failed');
    const e = pe ?? new ProxyError(500, 'internal_error', 'An internal error occurred; retry later');
    const ids: Record<string, string> = {};
    if (projectId) ids['x-svc-request-id'] = executionId;
    if (state.governed) ids['x-svc-permit-id'] = permitId;
    return { reply: proxyErrorReply(provider, e), ids };
  }
}

/** The pipeline's refusals as provider-native errors. */
const PROXY_ERRORS: SurfaceErrors = {
  invalidWorkflowId: () => new ProxyError(400, 'invalid_workflow_id', 'X-Svc-Workflow-Id must be 1 to 255 characters of [A-Za-z0-9_-]'),
  invalidIdempotencyKey: () => new ProxyError(400, 'invalid_idempotency_key', 'Idempotency-Key must be 1 to 255 visible ASCII characters'),
  idempotencyConflict: (key) => new ProxyError(409, 'idempotency_conflict', 'This Idempotency-Key was already used with a different request payload', { extra: { idempotency_key: key } }),
  notReplayable: (key) => new ProxyError(409, 'idempotency_conflict', 'This Idempotency-Key was used by a request whose response is not replayable', { extra: { idempotency_key: key } }),
  inFlight: (key) => new ProxyError(409, 'idempotency_in_flight', 'A request with this Idempotency-Key is still in flight', { extra: { idempotency_key: key } }),
};

/** What the pipeline answers on this surface: a reply to send, or `sent` when a stream already went out. */
interface ProxyAnswer {
  reply: Reply | null;
  sent: boolean;
}

/** The proxy surface: native answers, the native attempt (pass-through or translated), native replays. */
function proxySurface(
  deps: ProxyDeps,
  io: { request: ProxyRequest; sink: StreamSink },
  parsed: { call: ProxyCall; plan: RoutingPlan; body: ParsedBody; input: ExecutionInput },
  state: { governed: boolean },
): Omit<Surface<ProxyAnswer>, 'requestHash' | 'scope'> {
  const { request, sink } = io;
  const { call, plan, body, input } = parsed;
  const { clock } = deps;
  const { permitId, executionId } = input;
  const route = `proxy:${call.provider}`;
  const tollgateHeaders: Record<string, string> = { 'x-svc-permit-id': permitId, 'x-svc-request-id': executionId };
  const normalizedFor = (c: ProxyCall, t: Target): NormalizedRequest => ({ ...translatedRequest(c, t), stream: c.stream, ...(c.request.providerOptions?.[t.provider] ? { providerOptions: c.request.providerOptions[t.provider] } : {}) });
  // The reply the caller gets is what an idempotent retry replays (throttles and >= 500 are not kept).
  let finalReply: Reply | null = null;
  // The firewall's `redact` action: every string value of the JSON body masked, re-serialized, and
  // the call inferred again from it (its texts for the check, its normalized view for a translated
  // target). A multipart body is not rewritten: its redaction blocks instead.
  const redaction = surfaceRedaction((r) => {
    if (body.kind !== 'json') return null;
    const json = r.json(body.json) as Record<string, unknown>;
    const masked: ParsedBody = { kind: 'json', raw: Buffer.from(JSON.stringify(json)), contentType: body.contentType, json };
    const c = inferCall(call.provider, call.path, masked);
    return { copy: { call: c, body: masked }, texts: c.inspectableItems };
  });

  const denied = (gov: GovernOutcome): Reply => {
    const status = gov.decision === 'throttle' ? 429 : 403;
    const headers: Record<string, string> = { ...tollgateHeaders };
    if (status === 429) headers['retry-after'] = String(Math.max(1, Math.ceil(gov.retry_after_seconds ?? 1)));
    const message = gov.decision === 'review' ? `${gov.display_reason} (${gov.reason_code}; the request needs human review)` : gov.display_reason;
    return jsonReply(status, nativeErrorBody(call.provider, { status, code: gov.reason_code, message, extra: { decision: gov.decision, permit_id: permitId } }), headers);
  };
  return {
    errors: PROXY_ERRORS,
    replay: (stored) => ({ reply: replayReply(stored), sent: false }),
    respond: () => (finalReply && cacheable(finalReply.status) ? { status: finalReply.status, headers: storedHeaders(finalReply.headers), body: finalReply.body } : 'release'),
    onInterrupted: 'release',
    govern: () => ({
      request: normalizedFor(call, plan.primary),
      route,
      inspectableText: call.inspectableItems,
      ...(call.tools.length ? { tools: call.tools } : {}),
      redact: redaction.redact,
      permitMetadata: { execution_id: executionId, mode: input.mode, key_id: input.keyId, proxy: call.provider, native_path: call.pathname },
      inProcess: { routingMeta: { route }, startedMeta: { native_path: call.pathname } },
    }),
    governed(gov) {
      state.governed = true;
      if (gov.decision !== 'allow') finalReply = denied(gov);
    },
    denied: () => ({ reply: finalReply, sent: false }),
    async dispatch(_input, gov) {
      // Hard caps: the ceiling governance set or lowered goes into every try (native field or translated request).
      const ceiling = gov.max_output_tokens;
      // Only the masked body is sent (pass-through bytes and translated request) when the firewall redacted.
      const m = gov.firewall?.redacted.length ? redaction.masked(gov.firewall.redacted) : { call, body };
      const sent = withOutputCeiling(m.call, gov);
      const told = gov.actions.filter((a) => a.type !== 'proceed');
      if (told.length) tollgateHeaders[GOVERNANCE_ACTIONS_HEADER] = JSON.stringify(told);
      const fw = firewallHeader(gov.firewall);
      if (fw) tollgateHeaders[FIREWALL_HEADER] = fw;

      const abort = new AbortController();
      const stopListening = sink.onClientGone(() => abort.abort());
      let run;
      try {
        run = await dispatchWithFallback<Attempt>(input, [plan.primary, ...plan.fallback], async (target, i) => {
          const routingHeaders: Record<string, string> = plan.headers.provider || plan.headers.model || plan.headers.chain ? { 'x-svc-selected-provider': target.provider, 'x-svc-selected-model': target.model, 'x-svc-fallback-occurred': String(i > 0) } : {};
          const extraHeaders = { ...tollgateHeaders, ...routingHeaders };
          const a = await providerAttempt(deps.genAi, { operation: call.operation, provider: target.provider, model: target.model, attempt: i + 1 }, async (span) => {
            const r =
              target.provider === call.provider
                ? await passThrough(deps, { sink, signal: abort.signal }, { call: sent, body: m.body, headers: request.headers }, { target, req: normalizedFor(sent, target), extraHeaders, ceiling })
                : await translated(deps, sent, target, { signal: abort.signal, extraHeaders });
            if (!r.ok) span.setAttribute('tollgate.failure', r.failure?.kind ?? 'unknown');
            return r;
          }, (r) => (r.ok ? { usage: r.usage, responseModel: r.model } : { failure: r.failure, usage: r.partial }));
          return { ...a, final: Boolean(a.streamed || a.aborted) };
        }, { clock, stream: call.stream, signal: abort.signal });
      } finally {
        stopListening();
      }
      const { last: attempt, target, attempts, fallbackOccurred } = run;
      let outcome: DispatchOutcome;
      if (attempt.ok) {
        // The record keeps no answer text for a proxied call: its finish reason and its tool calls' names.
        const toolCalls = (attempt.answer?.tool_calls ?? []).map((c) => c.name).filter(Boolean);
        const result: ProviderResult = {
          output: { content: [] },
          output_assets: [],
          usage: attempt.usage!,
          finish_reason: attempt.answer?.finish_reason ?? null,
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
          ...(attempt.model ? { provider_model: attempt.model } : {}),
        };
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
      return {
        outcome,
        fallbackEvents: run.events,
        answer: () => ({ reply: attempt.reply ?? null, sent: Boolean(attempt.streamed) }),
        done: () => attempt.finish?.(),
      };
    },
  };
}
