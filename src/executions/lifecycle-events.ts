/**
 * A governed call's lifecycle events, derived from its record and its permit instead of stored as
 * event rows (docs/decisions/call-record.md). Every event here is rebuilt from persisted columns
 * (the record's `lifecycle`, src/executions/lifecycle.ts, and the permit): the same types, order,
 * timestamps and metadata the pipeline wrote as rows before, and nothing that is not stored
 * ("no synthetic data").
 *
 * Seqs: a record takes one seq from the events' sequence, which hands out every 64th value; its
 * derived events take seq + 1, seq + 2, ... so they sort among stored events as the rows they
 * replace did. Ids: `evt_<execution id>.<n>` (`derivedEventRef` reads one back).
 */
import { eventColumns, type EventRecord, type NewEvent } from '../events/types';
import { dispatchOfRecord, isTurnLifecycle, type DispatchStart, type JobAttemptStart, type Lifecycle, type PermitColumns, type RecordColumns, type StoredRouting } from './lifecycle';

export const EXECUTION_EVENT_SOURCE = 'execution_events';

/** total_tokens as the envelope holds it: stored when the provider's differs from input + output. */
function totalTokens(r: RecordColumns): number {
  const u = (r.envelope as StoredRouting).usage;
  return u?.total_tokens ?? r.input_tokens + r.output_tokens;
}

/** A derived event: an EventRecord with no hash of its own (its record is the chained leaf). */
export type DerivedEvent = EventRecord & { derived_from: 'record' | 'permit' };

const iso = (d: Date | string) => new Date(d).toISOString();

interface Draft {
  type: string;
  source: string;
  phase: string;
  at: string;
  target: { provider: string | null; model: string | null } | null;
  metadata: Record<string, unknown>;
}

/** permit.allowed and permit.expiry_scheduled of a pipeline call's permit (what governance wrote as rows before). */
function permitDrafts(p: PermitColumns): Draft[] {
  const fw = (p.metadata?.decision_metadata as { firewall?: { mode?: string; categories?: string[] } } | undefined)?.firewall;
  const tools = p.metadata?.tools;
  const target = { provider: p.provider, model: p.model };
  const out: Draft[] = [
    {
      type: 'permit.allowed',
      source: 'permits',
      phase: 'permit',
      at: iso(p.issued_at),
      target,
      metadata: {
        decision: p.decision,
        reason: p.display_reason,
        reason_code: p.reason_code,
        route: p.route,
        operation: p.operation,
        workflow_id: p.workflow_id ?? null,
        ...(Array.isArray(tools) && tools.length ? { tools } : {}),
        reserved_cost_usd_micros: Number(p.reserved_cost_micros),
        ...(fw?.mode === 'monitor' ? { firewall_monitor_categories: fw.categories } : {}),
      },
    },
  ];
  if (p.expires_at) out.push({ type: 'permit.expiry_scheduled', source: 'permits', phase: 'permit', at: iso(p.issued_at), target, metadata: { expires_at: iso(p.expires_at) } });
  return out;
}

/**
 * An allow's decision events as rows, for a call governance left them to but that is recorded
 * without a lifecycle (a job cancelled before its dispatch started): the same events its record
 * would have derived.
 */
export function permitEventRows(p: PermitColumns): NewEvent[] {
  return permitDrafts(p).map((d) => draftEvent(d, { projectId: p.project_id, permitId: p.id, requestId: p.request_id }));
}

/** The phase of each execution event type (source execution_events), derived or stored. */
export const EXECUTION_EVENT_PHASES = {
  'permit.denied': 'permit',
  'request.denied': 'completion',
  'routing.selected_model': 'routing',
  'execution.started': 'execution',
  'provider.request_sent': 'execution',
  'provider.response_received': 'execution',
  'fallback.triggered': 'routing',
  'fallback.selected_model': 'routing',
  'usage.recorded': 'usage',
  'request.completed': 'completion',
  'request.errored': 'completion',
} as const;

export type ExecutionEventType = keyof typeof EXECUTION_EVENT_PHASES;

function exec(type: ExecutionEventType, at: string, target: Draft['target'], metadata: Record<string, unknown>): Draft {
  return { type, source: EXECUTION_EVENT_SOURCE, phase: EXECUTION_EVENT_PHASES[type], at, target, metadata };
}

/** The first try's events: routing.selected_model, execution.started, provider.request_sent. */
function dispatchDrafts(d: DispatchStart): Draft[] {
  return [
    exec('routing.selected_model', d.at, d.primary, d.routing),
    exec('execution.started', d.at, d.primary, d.started),
    exec('provider.request_sent', d.at, d.primary, { attempt: 1, stream: d.stream }),
  ];
}

/** Everything after the first request: fallback tries, the last response, usage and completion. */
function recordDrafts(r: RecordColumns, l: Lifecycle, stream: boolean): Draft[] {
  const out: Draft[] = [];
  const t0 = new Date(r.created_at).getTime();
  const at = (ms: number) => new Date(t0 + ms).toISOString();
  const a = l.attempts;
  const jobs = l.job_attempts;
  // A job's later dispatch attempts: each one's own provider.request_sent, and the retried response
  // of the try before it (as the job's dispatch activity wrote them as rows).
  const startsAt = (n: number) => (jobs ?? []).filter((j) => j[2] === n);
  const jobAttemptOf = (tryIndex: number) => Math.max(1, ...(jobs ?? []).filter((j) => j[2] <= tryIndex).map((j) => j[0]));
  const jobSent = (j: JobAttemptStart, primary: Draft['target']) => exec('provider.request_sent', at(j[1]), primary, { attempt: j[2] + 1, stream, job_attempt: j[0] });
  const retried = (i: number) => {
    const [provider, model, , received, status, failureKind] = a[i];
    return exec('provider.response_received', at(received), { provider, model }, { ok: false, status, failure_kind: failureKind, attempt: i + 1, job_attempt: jobAttemptOf(i), retried: true });
  };
  const primaryTarget = jobs ? dispatchOfRecord(r, l).primary : null;
  for (const j of startsAt(0)) out.push(jobSent(j, primaryTarget));
  for (let i = 0; i + 1 < a.length; i++) {
    if (jobs && startsAt(i + 1).length > 0) {
      out.push(retried(i));
      for (const j of startsAt(i + 1)) out.push(jobSent(j, primaryTarget));
      continue;
    }
    const [provider, model, , received, status, failureKind] = a[i];
    const [nextProvider, nextModel, nextSent] = a[i + 1];
    const t = { provider, model };
    const nextTarget = { provider: nextProvider, model: nextModel };
    out.push(exec('provider.response_received', at(received), t, { ok: false, status, failure_kind: failureKind, attempt: i + 1 }));
    out.push(exec('fallback.triggered', at(nextSent), t, { failure_kind: failureKind, status: status ?? null, next_provider: nextProvider, next_model: nextModel }));
    out.push(exec('fallback.selected_model', at(nextSent), nextTarget, { position: i + 1 }));
    out.push(exec('provider.request_sent', at(nextSent), nextTarget, { attempt: i + 2, stream }));
  }
  if (jobs && a.length > 0) {
    // A job that ended after a retried try (cancelled while waiting, or its next attempt lost).
    if (startsAt(a.length).length > 0 || l.end === 'interrupted') out.push(retried(a.length - 1));
    for (const j of startsAt(a.length)) out.push(jobSent(j, primaryTarget));
  }
  const completedAt = iso(r.completed_at);
  const target = { provider: r.provider, model: r.model };
  const last = a[a.length - 1];
  if (l.end === 'ok') {
    const tools = l.tool_calls ? { tool_calls: l.tool_calls } : {};
    out.push(exec('provider.response_received', at(last[3]), target, { ok: true, status: 200, attempt: a.length, finish_reason: l.finish_reason ?? null, ...tools }));
  } else if (l.end === 'failed') {
    out.push(exec('provider.response_received', last ? at(last[3]) : completedAt, target, { ok: false, status: l.failure_status ?? null, failure_kind: l.failure_kind, attempt: a.length }));
  } else {
    const primary = dispatchOfRecord(r, l).primary;
    out.push(exec('provider.response_received', completedAt, primary, { ok: false, failure_kind: 'interrupted' }));
  }
  out.push(usageDraft(r), ...endDrafts(r));
  return out;
}

/** usage.recorded, at the record's completion. */
function usageDraft(r: RecordColumns): Draft {
  return exec('usage.recorded', iso(r.completed_at), { provider: r.provider, model: r.model }, {
    input_tokens: r.input_tokens,
    output_tokens: r.output_tokens,
    total_tokens: totalTokens(r),
    cost_usd_micros: Number(r.cost_usd_micros),
    estimated_final: r.estimated_final,
  });
}

/** request.completed or request.errored, at the record's completion. */
function endDrafts(r: RecordColumns): Draft[] {
  const completedAt = iso(r.completed_at);
  const target = { provider: r.provider, model: r.model };
  if (r.status === 'completed') return [exec('request.completed', completedAt, target, { status_code: r.status_code })];
  return [exec('request.errored', completedAt, target, { status_code: r.status_code, error_code: r.error_code ?? undefined })];
}

/**
 * A session turn's events after its permit's (which the session stores as rows): the usage it
 * settled and request.completed, or request.errored alone when the session closed with no usage
 * reported for it. Its provider call was the client's: nothing of a dispatch is derived.
 */
function turnDrafts(r: RecordColumns): Draft[] {
  return r.status === 'completed' ? [usageDraft(r), ...endDrafts(r)] : endDrafts(r);
}

/** The ids a call's events share. */
type EventIds = Pick<NewEvent, 'projectId' | 'permitId' | 'requestId' | 'jobId' | 'sessionId'>;

interface DraftBase extends EventIds {
  seq: number | null;
  idOf: (n: number) => string;
}

/** A draft as the event it stands for, written by its call. */
function draftEvent(d: Draft, ids: EventIds): NewEvent {
  const target = { provider: d.target?.provider ?? null, model: d.target?.model ?? null };
  return { ...ids, ...target, eventType: d.type, source: d.source, phase: d.phase, metadata: d.metadata, timestamp: new Date(d.at) };
}

function materialize(drafts: Draft[], base: DraftBase, from: DerivedEvent['derived_from'], offset: number): DerivedEvent[] {
  const { seq, idOf, ...ids } = base;
  return drafts.map((d, i) => ({
    seq: seq === null ? (null as unknown as number) : seq + offset + i + 1,
    id: idOf(offset + i + 1),
    project_id: ids.projectId,
    timestamp: new Date(d.at),
    ...eventColumns(draftEvent(d, ids)),
    // As the rows held them: JSON, so an undefined member is absent.
    metadata: JSON.parse(JSON.stringify(d.metadata)) as Record<string, unknown>,
    prev_hash: null,
    hash: null,
    chain_pos: null,
    derived_from: from,
  }));
}

/** The id of a record's n-th derived event. */
export function derivedEventId(executionId: string, n: number): string {
  return `evt_${executionId}.${n}`;
}

/** The record and position a derived event id names, or null for a stored event's id. */
export function derivedEventRef(eventId: string): { executionId: string; n: number } | null {
  const m = /^evt_(.+)\.(\d{1,2})$/.exec(eventId);
  return m ? { executionId: m[1], n: Number(m[2]) } : null;
}

/**
 * The lifecycle events of a recorded call, in order: its permit's decision events, the dispatch,
 * every attempt, the response, usage and completion. Empty for a record without `lifecycle` (its
 * events are stored rows). `chainPos` is the record's chain position, when chained: every event
 * derived from it is at that position.
 */
export function recordEvents(r: RecordColumns, permit: PermitColumns | null, chainPos: number | null = null): DerivedEvent[] {
  if (!r.lifecycle) return [];
  const seq = r.seq === null ? null : Number(r.seq);
  const base = { seq, projectId: r.project_id, permitId: r.permit_id, requestId: r.id, jobId: r.job_id ?? null, sessionId: r.session_id ?? null, idOf: (n: number) => derivedEventId(r.id, n) };
  // A session turn's permit events are the session's stored rows (its timeline is the session's).
  if (isTurnLifecycle(r.lifecycle)) return materialize(turnDrafts(r), base, 'record', 0).map((e) => ({ ...e, chain_pos: chainPos }));
  const own = permit ? permitDrafts(permit) : [];
  const dispatch = dispatchOfRecord(r, r.lifecycle);
  const drafts = [...own, ...dispatchDrafts(dispatch), ...recordDrafts(r, r.lifecycle, dispatch.stream)];
  return materialize(drafts, base, 'record', 0).map((e, i) => ({ ...e, derived_from: i < own.length ? 'permit' : 'record', chain_pos: chainPos }));
}

/**
 * The events of a call still in flight, from its permit alone (`closing.dispatch`): its decision
 * and the first try. No seq: the call has no record yet; they sort after the request's stored events.
 */
export function inFlightEvents(permit: PermitColumns): DerivedEvent[] {
  const dispatch = (permit.closing as { dispatch?: DispatchStart } | null | undefined)?.dispatch;
  const executionId = (permit.closing as { input?: { executionId?: string } } | null | undefined)?.input?.executionId;
  if (!dispatch || !executionId) return [];
  const base = { seq: null, projectId: permit.project_id, permitId: permit.id, requestId: executionId, jobId: null, idOf: (n: number) => derivedEventId(executionId, n) };
  const own = permitDrafts(permit);
  return materialize([...own, ...dispatchDrafts(dispatch)], base, 'permit', 0);
}
