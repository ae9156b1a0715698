/**
 * The call record's `lifecycle` column: what a governed call's lifecycle events need beyond the
 * row's columns and its stored envelope (docs/decisions/call-record.md).
 *
 * The in-process pipeline and a job write no row per lifecycle step: the permit holds the decision
 * (and, while a pipeline call runs, `closing`, whose `dispatch` says when and how it was
 * dispatched; a job keeps its dispatch starts on the job instead), and the call record holds
 * `lifecycle` with its columns (status, usage, cost, error, times). The events are derived from
 * these stored columns (src/executions/lifecycle-events.ts).
 */
import type { PermitRecord } from '../db/repositories/permits';
import type { EnvelopeColumns } from './envelope';
import { pick } from '../pick';

/** How and when a call was dispatched: the metadata of its first three events, from its surface. */
export interface DispatchStart {
  /** ISO instant of routing.selected_model, execution.started and the first provider.request_sent. */
  at: string;
  primary: { provider: string; model: string };
  /** routing.selected_model's metadata. */
  routing: Record<string, unknown>;
  /** execution.started's metadata. */
  started: Record<string, unknown>;
  stream: boolean;
}

/**
 * One provider attempt as the record keeps it: target, sent and received as milliseconds after the
 * record's `created_at`, the HTTP status (null when none came back), and the failure kind of a
 * failed try. An array, not an object: the record is the one row a call leaves, so every key
 * repeated per attempt would be stored bytes on every call.
 */
export type LifecycleAttempt = [provider: string, model: string, sentMs: number, receivedMs: number, status: number | null, failureKind?: string];

/**
 * The call record's `lifecycle` column: what the call's events hold beyond the row's columns and
 * its stored envelope. Instants are milliseconds after `created_at`.
 */
export interface Lifecycle {
  /** routing.selected_model, execution.started and the first provider.request_sent. */
  dispatched_ms: number;
  attempts: LifecycleAttempt[];
  /** How the last try ended: a response (ok), a failure (failed, with `failure_kind`/`failure_status`), or no report (interrupted). */
  end: 'ok' | 'failed' | 'interrupted';
  finish_reason?: string | null;
  /** The names of the tool calls the answer carried, in order (never their arguments); absent when none. */
  tool_calls?: string[];
  failure_kind?: string;
  failure_status?: number | null;
  /** The first target, when no attempt names it (an interrupted call). */
  primary?: [provider: string, model: string];
  /** The routing reason of the first target, when the envelope's is `explicit_fallback`. */
  routing_reason?: string;
  /** The surface's own members of routing.selected_model and of execution.started (e.g. a proxy's route and path). */
  routing?: Record<string, unknown>;
  started?: Record<string, unknown>;
  /**
   * A job's dispatch attempts after its first (activities/jobs.ts): job attempt number, when it
   * started (ms after `created_at`) and how many provider tries came before it. A job retries a
   * retryable failure with a new dispatch attempt, not a fallback: the timeline shows the failed
   * try's response as `retried` and the attempt's own provider.request_sent. An attempt that was
   * lost (its worker died) has no tries of its own.
   */
  job_attempts?: JobAttemptStart[];
}

/**
 * The `lifecycle` of a session turn's record (src/sessions/turn-record.ts): the turn's number in
 * its session. The turn's provider call was the client's, so the record keeps no dispatch and no
 * attempt; its derived events are its usage and its end, from the record's columns.
 */
export interface TurnLifecycle {
  turn: number | null;
}

/** Whether a record's lifecycle is a session turn's. */
export function isTurnLifecycle(l: Lifecycle | TurnLifecycle): l is TurnLifecycle {
  return 'turn' in l;
}

/** A job's later dispatch attempt: its number, its start in ms after `created_at`, the provider tries before it. */
export type JobAttemptStart = [jobAttempt: number, sentMs: number, priorTries: number];

/** The stored envelope's members the dispatch events read (src/executions/envelope.ts, StoredEnvelope). */
export interface StoredRouting {
  routing?: { requested_provider: string | null; requested_model: string | null; reason_code: string };
  usage?: { total_tokens?: number };
}

/** The columns of a call record the derived events read: the envelope's columns and the record's own. */
export interface RecordColumns
  extends Pick<EnvelopeColumns, 'id' | 'status_code' | 'provider' | 'model' | 'input_tokens' | 'output_tokens' | 'cost_usd_micros' | 'estimated_final' | 'error_code' | 'created_at' | 'completed_at'> {
  project_id: string;
  seq: number | string | null;
  permit_id: string | null;
  job_id?: string | null;
  session_id?: string | null;
  operation: string;
  mode: string;
  status: string;
  envelope: StoredRouting | Record<string, unknown>;
  lifecycle: Lifecycle | TurnLifecycle | null;
}

/** A finished dispatch as the pipeline (or a job) reports it. */
export interface DispatchRun {
  attempts: { provider: string; model: string; sentAt: string; receivedAt: string; status: number | null; failureKind?: string }[];
  /** How the last try ended. */
  end: { kind: 'ok'; finishReason: string | null; toolCalls?: string[] } | { kind: 'failed'; failureKind: string; status: number | null } | { kind: 'interrupted' };
  /** The envelope's routing reason: the lifecycle keeps the first target's only when it differs. */
  envelopeReason: string;
  /** A job's dispatch attempts (absent for the in-process pipeline). */
  jobAttempts?: { attempt: number; at: string; priorTries: number }[];
}

/** The record's lifecycle from a finished dispatch (the pipeline's attempts and how the last ended). */
export function lifecycleOf(createdAt: string, dispatch: DispatchStart, run: DispatchRun): Lifecycle {
  const { attempts, end, envelopeReason, jobAttempts } = run;
  const t0 = new Date(createdAt).getTime();
  const ms = (at: string) => new Date(at).getTime() - t0;
  const { reason_code: routingReason, requested_provider: _p, requested_model: _m, ...routingExtra } = dispatch.routing;
  const { operation: _o, mode: _mode, ...startedExtra } = dispatch.started;
  const l: Lifecycle = {
    dispatched_ms: ms(dispatch.at),
    attempts: attempts.map((a) => {
      const row: LifecycleAttempt = [a.provider, a.model, ms(a.sentAt), ms(a.receivedAt), a.status];
      if (a.failureKind) row.push(a.failureKind);
      return row;
    }),
    end: end.kind,
  };
  if (end.kind === 'ok') {
    l.finish_reason = end.finishReason;
    if (end.toolCalls?.length) l.tool_calls = end.toolCalls;
  }
  if (end.kind === 'failed') {
    l.failure_kind = end.failureKind;
    l.failure_status = end.status;
  }
  if (attempts.length === 0) l.primary = [dispatch.primary.provider, dispatch.primary.model];
  if (routingReason !== envelopeReason) l.routing_reason = routingReason as string;
  if (Object.keys(routingExtra).length > 0) l.routing = routingExtra;
  if (Object.keys(startedExtra).length > 0) l.started = startedExtra;
  // Kept (even empty) on every job's record: it also says a try before the end was a retried one.
  if (jobAttempts) l.job_attempts = jobAttempts.filter((j) => j.attempt > 1).sort((x, y) => x.attempt - y.attempt).map((j) => [j.attempt, ms(j.at), j.priorTries]);
  return l;
}

/** The dispatch start a record's lifecycle keeps, rebuilt with the row's columns and stored envelope. */
export function dispatchOfRecord(r: RecordColumns, l: Lifecycle): DispatchStart {
  const t0 = new Date(r.created_at).getTime();
  const routing = (r.envelope as StoredRouting).routing ?? { requested_provider: null, requested_model: null, reason_code: '' };
  const first = l.attempts[0];
  const primary = first ? { provider: first[0], model: first[1] } : { provider: l.primary?.[0] ?? r.provider ?? '', model: l.primary?.[1] ?? r.model ?? '' };
  return {
    at: new Date(t0 + l.dispatched_ms).toISOString(),
    primary,
    routing: { reason_code: l.routing_reason ?? routing.reason_code, requested_provider: routing.requested_provider, requested_model: routing.requested_model, ...l.routing },
    started: { operation: r.operation, mode: r.mode, ...l.started },
    stream: r.mode === 'stream',
  };
}

/**
 * The permit columns its decision events read, as a row or a JSON document carries them (so the
 * decision is any string, amounts may come as text and times as ISO strings).
 */
export type PermitColumns = Pick<
  PermitRecord,
  'id' | 'project_id' | 'request_id' | 'route' | 'operation' | 'provider' | 'model' | 'workflow_id' | 'reason_code' | 'display_reason' | 'metadata'
> & {
  decision: string;
  reserved_cost_micros: number | string;
  issued_at: Date | string;
  expires_at: Date | string | null;
  closing?: Record<string, unknown> | null;
};

/** The members of a permit's decision that a call record's leaf and a permit's timeline both state. */
const PERMIT_DECISION_FIELDS = ['decision', 'reason_code', 'display_reason', 'route', 'operation', 'provider', 'model', 'workflow_id'] as const;

/** The permit's decision members, each as the permit holds it. */
export function permitDecision<P extends Pick<PermitColumns, (typeof PERMIT_DECISION_FIELDS)[number]>>(p: P) {
  return pick(p, PERMIT_DECISION_FIELDS);
}
