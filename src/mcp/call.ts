/**
 * POST /v1/mcp/servers/{server_ref}/tools/{tool_name}:call — governed, then called through the MCP
 * SDK client, recorded as evidence. Idempotency (spec table, "MCP tool call"): the key is bound to
 * project, calling key, server, tool, arguments, workflow and session, and the stream flag;
 * different bound content → 409; a repeated non-stream call replays only after a fresh
 * authorization check; a repeated stream claim → 409 without a second upstream call.
 * Decisions: docs/decisions/managed-mcp-tool-calls.md.
 */
import canonicalize from 'canonicalize';
import type { Config } from '../config';
import type { KeyAuthContext } from '../auth-context';
import { ApiError, errors } from '../errors';
import { newId } from '../ids';
import type { ProviderId } from '../providers/types';
import type { GovernanceRequest, PermitDecision } from '../governance';
import { findMcpServer } from '../db/repositories/mcp-servers';
import { claimMcpToolCall, findMcpToolCallByKey, finishMcpToolCall, type McpToolCallRecord } from '../db/repositories/mcp-tool-calls';
import type { SessionServiceDeps } from '../sessions/service';
import { requireSession } from '../sessions/service';
import { argumentsSha256, permitAction, sha256Hex, TOOL_OPERATION } from '../sessions/turns';
import { sessionEvent } from '../sessions/events';
import { callMcpTool, type McpCallOutcome } from './client';
import { credentialSendable } from './credentials';
import { checkServerUrl, serverTarget, toolAllowed } from './registry';
import type { ToolCallBody } from './schemas';
import { governJoined, joinIntent, type IntentJoin } from '../executions/reservation-denial';
import type { IntentReservations } from '../intents/reservations';
import { PERMIT_LEASE_KEY } from '../../workflows/intent-messages';

export interface McpCallDeps extends SessionServiceDeps {
  config: Config;
  /** A call joined to an intent takes its call from the intent's ceiling. */
  intentReservations: Pick<IntentReservations, 'reserveCall' | 'giveBack'>;
}

export interface Reply {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
  replayed?: boolean;
}

export interface StreamSink {
  start(meta: Record<string, unknown>): void;
  progress(p: { progress: number; total?: number; message?: string }): void;
}

const conflict = (key: string, reason: string) =>
  new ApiError(409, 'idempotency_conflict', reason === 'stream' ? 'A streaming tool call with this Idempotency-Key was already claimed; streams are not replayed' : reason === 'in_progress' ? 'A tool call with this Idempotency-Key is still running' : 'This Idempotency-Key was already used with different bound content', { details: { idempotency_key: key, reason } });

function denial(p: PermitDecision): ApiError {
  const headers: Record<string, string> = p.retry_after_seconds ? { 'retry-after': String(p.retry_after_seconds) } : {};
  return new ApiError(p.decision === 'throttle' ? 429 : 403, 'denied', p.display_reason, { details: { permit_id: p.permit_id, decision: p.decision, reason_code: p.reason_code, decision_details: p.decision_details }, headers });
}

export function toolCallView(c: McpToolCallRecord) {
  return {
    id: c.id, object: 'mcp_tool_call' as const, server_ref: c.server_ref, tool_name: c.tool_name, permit_id: c.permit_id, session_id: c.session_id, workflow_id: c.workflow_id,
    status: c.status, outcome: c.outcome, stream: c.stream, arguments_sha256: c.arguments_sha256, result_sha256: c.result_sha256, error: c.error, duration_ms: c.duration_ms,
    started_at: new Date(c.started_at).toISOString(), finished_at: c.finished_at ? new Date(c.finished_at).toISOString() : null,
  };
}

/** Calls `tool` of the project's server `serverRef` under governance; `sink` receives a streamed call's progress. */
export async function callTool(deps: McpCallDeps, auth: KeyAuthContext, call: { serverRef: string; tool: string; body: ToolCallBody }, sink?: StreamSink): Promise<Reply> {
  const { serverRef, tool, body: b } = call;
  const server = await findMcpServer(deps.db, auth.projectId, serverRef);
  if (!server) throw errors.notFound('MCP server', serverRef);
  if (!toolAllowed(server, tool)) throw errors.forbidden('mcp.tool_not_allowed', `Tool ${tool} is not in the allowed tools of MCP server ${serverRef}`, { server_ref: serverRef, tool_name: tool });
  const session = b.session_id ? await requireSession(deps, auth.projectId, b.session_id) : null;
  const workflowId = b.workflow_id ?? session?.workflow_id ?? null;
  const argsHash = argumentsSha256(b.arguments);
  const binding = sha256Hex(canonicalize({ project: auth.projectId, key: auth.keyId, server: serverRef, tool, arguments: b.arguments, workflow_id: workflowId, session_id: b.session_id ?? null, stream: b.stream }) ?? '');
  const govRequest = (requestId: string, intent: IntentJoin = {}): GovernanceRequest => ({
    projectId: auth.projectId, requestId, route: 'mcp', operation: TOOL_OPERATION, provider: 'mcp' as ProviderId, model: `${serverRef}/${tool}`,
    estimatedInputTokens: 0, estimatedOutputTokens: 0, estimatedCostMicros: b.estimated_cost_usd_micros, workflowId,
    ...(intent.refusal ? { intentRefusal: intent.refusal } : {}),
    metadata: { ...(b.metadata ?? {}), tool, mcp_server: serverRef, ...(b.session_id ? { session_id: b.session_id } : {}) },
  });

  const id = newId('mcpc');
  const claim = { id, project_id: auth.projectId, server_ref: serverRef, tool_name: tool, key_id: auth.keyId, session_id: b.session_id ?? null, workflow_id: workflowId, idempotency_key: b.idempotency_key ?? null, binding_sha256: binding, stream: b.stream, arguments_sha256: argsHash, started_at: deps.clock.now() };
  const claimed = await claimMcpToolCall(deps.db, claim);
  if (!claimed) {
    const prior = await findMcpToolCallByKey(deps.db, auth.projectId, b.idempotency_key!);
    if (!prior) throw conflict(b.idempotency_key!, 'in_progress');
    if (prior.binding_sha256 !== binding) throw conflict(b.idempotency_key!, 'binding');
    if (prior.stream) throw conflict(b.idempotency_key!, 'stream');
    if (prior.status !== 'completed' || !prior.response) throw conflict(b.idempotency_key!, 'in_progress');
    // Fresh authorization before a replay: the server and tool are still allowed (above) and policy still allows.
    const fresh = await deps.governance.evaluate(govRequest(prior.id), { persist: false });
    if (fresh.decision !== 'allow') throw denial(fresh);
    return { status: prior.http_status ?? 200, body: prior.response, replayed: true };
  }

  // Govern: within a session the call is one of its action permits (session ceilings too).
  let permit: { id: string | null; decision: PermitDecision | null };
  if (session) {
    const action = await permitAction(deps, session, { tool_name: tool, arguments: b.arguments, estimated_cost_usd_micros: b.estimated_cost_usd_micros, metadata: { ...(b.metadata ?? {}), mcp_server: serverRef } });
    const a = action.body;
    permit = { id: a.permit_id, decision: a.decision === 'allow' ? null : ({ permit_id: a.permit_id, decision: a.decision, reason_code: a.reason_code, display_reason: a.display_reason, decision_details: {} } as unknown as PermitDecision) };
  } else {
    // Joined to an intent (body or X-Svc-Workflow-Id): checked as executions are — the call is
    // taken from the intent's ceiling, or denied with the intent's reason code.
    const intent = workflowId ? await joinIntent(deps.intentReservations, auth.projectId, workflowId) : {};
    const d = await governJoined(deps.intentReservations, { projectId: auth.projectId, workflowId, intent }, () =>
      deps.governance.evaluate(govRequest(id, intent), {
        persist: true,
        permitMetadata: { mcp_tool_call_id: id, arguments_sha256: argsHash, ...(intent.lease ? { [PERMIT_LEASE_KEY]: intent.lease } : {}) },
      }),
    );
    permit = { id: d.permit_id, decision: d.decision === 'allow' ? null : d };
  }
  const events = (type: string, meta: Record<string, unknown>) =>
    session
      ? [sessionEvent(session, type, meta, { at: deps.clock.now(), permitId: permit.id, phase: 'tool' })]
      : [{ projectId: auth.projectId, eventType: type, source: 'mcp', phase: 'tool', provider: 'mcp', model: `${serverRef}/${tool}`, permitId: permit.id, requestId: id, metadata: meta, timestamp: deps.clock.now() }];
  const base = { tool_call_id: id, server_ref: serverRef, tool_name: tool, arguments_sha256: argsHash };
  if (permit.decision) {
    const err = denial(permit.decision);
    await finishMcpToolCall(deps.db, id, { permit_id: permit.id, outcome: 'denied', result_sha256: null, error: { code: permit.decision.reason_code, message: permit.decision.display_reason }, duration_ms: 0, http_status: err.status, response: err.toBody(), finished_at: deps.clock.now() }, events('mcp.tool_call.denied', { ...base, reason_code: permit.decision.reason_code }));
    throw err;
  }

  await checkServerUrl(deps.config, server.url);
  sink?.start({ tool_call_id: id, permit_id: permit.id });
  const t0 = performance.now();
  const target = await serverTarget(deps.db, deps.config, server);
  // A credential stored before registration checked it (a control character, a framing header
  // name) is not sent at all: fetch would refuse it with an error quoting the value, or send a
  // request whose framing it changes.
  const out: McpCallOutcome = credentialSendable(target.headers)
    ? await callMcpTool(target, tool, b.arguments, { timeoutMs: deps.config.mcp.callTimeoutMs, ...(sink ? { onProgress: (p) => sink.progress(p) } : {}) })
    : { kind: 'protocol_error', error: { code: 'invalid_credential', message: 'The stored credential of this MCP server is not a valid HTTP header; register the credential again' } };
  const duration = Math.round(performance.now() - t0);
  const finishedAt = deps.clock.now();
  const record = { ...claim, permit_id: permit.id, status: 'completed' as const, duration_ms: duration, finished_at: finishedAt };
  if (out.kind === 'protocol_error') {
    if (!session && permit.id) await deps.governance.release(permit.id, 'mcp_protocol_error');
    const err = new ApiError(502, 'upstream_error', `MCP server ${serverRef} failed: ${out.error.message}`, { details: { tool_call_id: id, permit_id: permit.id, mcp_error: out.error } });
    await finishMcpToolCall(deps.db, id, { permit_id: permit.id, outcome: 'protocol_error', result_sha256: null, error: out.error, duration_ms: duration, http_status: 502, response: err.toBody(), finished_at: finishedAt }, events('mcp.tool_call.failed', { ...base, outcome: 'protocol_error', error: out.error, duration_ms: duration }));
    throw err;
  }
  const outcome = out.isError ? 'tool_error' : 'success';
  const resultHash = sha256Hex(canonicalize(out.result) ?? '');
  if (!session && permit.id) await deps.governance.settle(permit.id, { costMicros: b.estimated_cost_usd_micros, inputTokens: 0, outputTokens: 0 });
  const body = { ...toolCallView({ ...record, outcome, result_sha256: resultHash, error: null, http_status: 200, response: null }), is_error: out.isError, result: out.result };
  await finishMcpToolCall(deps.db, id, { permit_id: permit.id, outcome, result_sha256: resultHash, error: null, duration_ms: duration, http_status: 200, response: body, finished_at: finishedAt }, events('mcp.tool_call.completed', { ...base, outcome, result_sha256: resultHash, duration_ms: duration }));
  return { status: 200, body };
}
