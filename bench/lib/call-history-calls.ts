/**
 * One generated call of the grown history (bench/lib/call-history.ts): its permit and record rows
 * as inserted and, for a call with a seq, its leaf as `readRecordLeaves` returns it. The mix is a
 * deterministic function of the call's index, so every run loads the same history.
 */
import { v7 as uuidv7 } from 'uuid';
import type { StoredRecordLeaf } from '../../src/db/repositories/record-leaves';
import type { Lifecycle, PermitColumns, RecordColumns } from '../../src/executions/lifecycle';

export interface HistoryProject {
  id: string;
  name: string;
  /** Calls of the project (denied ones included). */
  calls: number;
  /** Leaves chained (its records with a seq). */
  leaves: number;
  /** API key ids its records name. */
  keyIds: string[];
}

const PROVIDERS: [string, string[]][] = [
  ['openai', ['gpt-4o-mini', 'gpt-4o']],
  ['anthropic', ['claude-haiku-4-5', 'claude-sonnet-4-5']],
  ['google', ['gemini-2.5-flash', 'gemini-2.5-pro']],
  ['deepseek', ['deepseek-chat']],
  ['mistral', ['mistral-small-latest', 'mistral-large-latest']],
];
const RARE_MODEL = 'gpt-4.1-rare';
const ROUTES = ['executions', 'executions', 'proxy', 'execute'] as const;
const WORDS = 'meadow ember basalt indigo nimbus tundra delta granite cedar fjord opal umber vale zephyr lumen'.split(' ');

/** A deterministic pseudo-random 32-bit value of (i, salt): the mix is the same on every run. */
export function rnd(i: number, salt: number): number {
  let x = (i * 0x9e3779b1 + salt * 0x85ebca77) >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d) >>> 0;
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b) >>> 0;
  x ^= x >>> 16;
  return x >>> 0;
}

/** A UUIDv7-based id of `kind` made at `ms` (what `newId` makes at that instant). */
const idAt = (kind: string, ms: number) => `${kind}_${uuidv7({ msecs: ms }).replaceAll('-', '')}`;

export interface Call {
  project: number;
  permit: Record<string, unknown>;
  record: Record<string, unknown> & { id: string; completed_at: Date };
  leaf: StoredRecordLeaf | null;
}

/** One call's permit and record rows (as inserted) and, for a call with a seq, its leaf as `readRecordLeaves` returns it. */
export function makeCall(i: number, at: number, projects: HistoryProject[], projectOf: (i: number) => number): Call {
  const p = projectOf(i);
  const project = projects[p];
  const kind = i % 100;
  const status = kind < 97 ? 'completed' : kind < 99 ? 'failed' : 'denied';
  const [provider, models] = PROVIDERS[rnd(i, 1) % PROVIDERS.length];
  const model = i % 1000 === 7 ? RARE_MODEL : models[rnd(i, 2) % models.length];
  const route = ROUTES[i % ROUTES.length];
  const mode = rnd(i, 3) % 10 === 0 ? 'stream' : 'sync';
  const keyId = project.keyIds[i % project.keyIds.length];
  const intent = i % 100 === 42 ? `wfi_bench_${(i / 100) % 100 | 0}` : null;
  const latency = 150 + (rnd(i, 4) % 2800);
  const inputTokens = 20 + (rnd(i, 5) % 1500);
  const outputTokens = status === 'completed' ? 10 + (rnd(i, 6) % 400) : 0;
  const cost = status === 'completed' ? inputTokens * 2 + outputTokens * 8 : 0;
  const reserved = inputTokens * 2 + 1024 * 8;
  const execId = idAt('exec_req', at);
  const issued = at + 1;
  const permitId = idAt('permit', issued);
  const duration = status === 'denied' ? 2 : latency + 6;
  const completed = new Date(at + duration);
  const requested = rnd(i, 7) % 2 === 0;
  const routing = { reason_code: requested ? 'explicit_request' : 'default_model_for_provider', requested_model: requested ? model : null, fallback_occurred: false, requested_provider: provider };
  const allow = status !== 'denied';
  const governance = allow ? { reason: 'policy.active_policy_candidate', decision: 'allow' } : { reason: 'policy.model_not_allowed', decision: 'deny' };
  const text = `Emulated reply ${(rnd(i, 8) >>> 0).toString(16)}: ${Array.from({ length: 12 + (rnd(i, 9) % 20) }, (_, k) => WORDS[rnd(i, 10 + k) % WORDS.length]).join(' ')}.`;
  const envelope: Record<string, unknown> =
    status === 'completed'
      ? { usage: {}, output: { content: [{ role: 'assistant', text, type: 'text' }] }, routing, governance }
      : status === 'failed'
        ? { usage: { metrics: [] }, routing, governance, error_message: 'upstream returned 502' }
        : { governance };
  const lifecycle: Lifecycle | null =
    status === 'completed'
      ? { end: 'ok', attempts: [[provider, model, 3, 3 + latency, 200]], dispatched_ms: 2, finish_reason: 'stop' }
      : status === 'failed'
        ? { end: 'failed', attempts: [[provider, model, 3, 3 + latency, 502, 'http_error']], failure_kind: 'http_error', failure_status: 502, dispatched_ms: 2 }
        : null;
  if (lifecycle && route === 'proxy') lifecycle.routing = { route: 'proxy:openai', path: '/v1/chat/completions' };
  const permitRoute = route === 'proxy' ? 'proxy:openai' : route;
  const decision = allow
    ? { decision: 'allow', reason_code: 'policy.active_policy_candidate', display_reason: 'Allowed by the active project policy' }
    : { decision: 'deny', reason_code: 'policy.model_not_allowed', display_reason: 'The model is not allowed by the project policy' };
  const permit = {
    id: permitId,
    project_id: project.id,
    request_id: execId,
    route: permitRoute,
    operation: 'generate.text',
    provider,
    model,
    workflow_id: intent,
    ...decision,
    decision_details: {
      code: decision.reason_code,
      reason: decision.display_reason,
      decision: decision.decision,
      reason_detail: { kind: 'active_policy', outcome: allow ? 'allowed' : 'denied', category: 'policy' },
      policy_version: 0,
      projected_cost_usd_micros: reserved,
    },
    actions: allow ? [{ type: 'proceed', message: 'The request may proceed' }] : [{ type: 'stop', message: 'The request must not proceed' }],
    estimated_input_tokens: inputTokens,
    estimated_output_tokens: 1024,
    estimated_cost_micros: reserved,
    reservation_state: status === 'completed' ? 'settled' : status === 'failed' ? 'released' : 'none',
    reserved_cost_micros: allow ? reserved : 0,
    actual_cost_micros: allow ? cost : null,
    actual_input_tokens: allow ? inputTokens : null,
    actual_output_tokens: allow ? outputTokens : null,
    settled_at: status === 'completed' ? completed.toISOString() : null,
    released_at: status === 'failed' ? completed.toISOString() : null,
    release_reason: status === 'failed' ? 'call_failed' : null,
    issued_at: new Date(issued).toISOString(),
    expires_at: allow ? new Date(issued + 600_000).toISOString() : null,
    metadata: { mode, key_id: keyId, execution_id: execId, request_metadata: {}, decision_metadata: { evaluated_at: new Date(issued).toISOString(), policy_version: 0 } },
  };
  const record = {
    id: execId,
    project_id: project.id,
    seq: null as string | null,
    route,
    operation: 'generate.text',
    mode,
    status,
    status_code: status === 'completed' ? 200 : status === 'failed' ? 502 : 403,
    permit_id: permitId,
    provider,
    model,
    intent_id: intent,
    idempotency_key: null,
    key_id: keyId,
    job_id: null,
    input_tokens: inputTokens,
    output_tokens: outputTokens,
    cost_usd_micros: cost,
    estimated_final: false,
    error_code: status === 'failed' ? 'upstream_error' : status === 'denied' ? 'policy_denied' : null,
    created_at: new Date(at),
    completed_at: completed,
    duration_ms: duration,
    envelope,
    lifecycle,
  };
  const leafPermit: PermitColumns = {
    id: permit.id,
    project_id: permit.project_id,
    request_id: permit.request_id,
    route: permit.route,
    operation: permit.operation,
    provider,
    model,
    workflow_id: intent,
    decision: permit.decision,
    reason_code: permit.reason_code,
    display_reason: permit.display_reason,
    reserved_cost_micros: String(permit.reserved_cost_micros),
    issued_at: new Date(issued),
    expires_at: permit.expires_at === null ? null : new Date(permit.expires_at),
    // readRecordLeaves reads only the firewall decision of the metadata.
    metadata: { decision_metadata: { firewall: null } },
  };
  const leaf = lifecycle ? { project_id: project.id, seq: '', row: record as unknown as RecordColumns & Record<string, unknown>, permit: leafPermit } : null;
  return { project: p, permit, record, leaf };
}

/** A project's log as the loader extends it: chain head and the tree's compact range. */
