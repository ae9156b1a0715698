/** Response shapes of the session routes (docs/decisions/sessions.md). */
import type { SessionRecord } from '../db/repositories/sessions';
import type { SessionTurnRecord } from '../db/repositories/session-turns';
import type { SearchEvidenceRecord } from '../db/repositories/session-search-evidence';
import type { SessionSnapshot } from '../../workflows/session-messages';

const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : null);

export interface LiveCounters {
  status: string;
  turns: number;
  spentMicros: number;
  reservedMicros: number;
}

export function liveCounters(s: SessionSnapshot): LiveCounters {
  let reserved = 0;
  for (const r of Object.values(s.reservations)) reserved += r.micros;
  return { status: s.status, turns: s.turns, spentMicros: s.spentMicros, reservedMicros: reserved };
}

export function sessionView(r: SessionRecord, live: LiveCounters | null = null) {
  const status = live && r.status === 'active' ? live.status : r.status;
  const turns = live && r.status === 'active' ? live.turns : r.turns;
  const spent = live && r.status === 'active' ? live.spentMicros : Number(r.spent_usd_micros);
  return {
    id: r.id,
    object: 'session' as const,
    status,
    provider: r.provider,
    model: r.model,
    modality: r.modality,
    workflow_id: r.workflow_id,
    limits: {
      max_turns: r.max_turns,
      max_cost_usd_micros: r.max_cost_usd_micros === null ? null : Number(r.max_cost_usd_micros),
      max_duration_seconds: r.max_duration_seconds,
      idle_timeout_seconds: r.idle_timeout_seconds,
    },
    usage: {
      turns,
      spent_usd_micros: spent,
      reserved_usd_micros: live && r.status === 'active' ? live.reservedMicros : 0,
    },
    metadata: r.metadata ?? {},
    started_at: iso(r.started_at),
    expires_at: iso(r.expires_at),
    ended_at: iso(r.ended_at),
    end_reason: r.end_reason,
    error: r.error,
  };
}

export function turnView(t: SessionTurnRecord, session?: LiveCounters & { maxTurns: number | null; maxCostMicros: number | null }) {
  return {
    id: t.id,
    object: t.kind === 'turn' ? ('session.turn' as const) : ('session.action_permit' as const),
    session_id: t.session_id,
    ...(t.kind === 'turn' ? { turn_id: t.client_turn_id, turn_number: t.turn_number, role: t.role } : { action_id: t.client_turn_id, tool_name: t.tool_name, arguments_sha256: t.arguments_sha256 }),
    decision: t.decision,
    reason_code: t.reason_code,
    display_reason: t.display_reason,
    permit_id: t.permit_id,
    estimated_cost_usd_micros: Number(t.estimated_cost_micros),
    usage: t.usage,
    cost_usd_micros: t.cost_usd_micros === null ? null : Number(t.cost_usd_micros),
    settled: t.settled_at !== null,
    created_at: iso(t.created_at),
    ...(session
      ? {
          session: {
            status: session.status,
            turns: session.turns,
            max_turns: session.maxTurns,
            spent_usd_micros: session.spentMicros,
            reserved_usd_micros: session.reservedMicros,
            max_cost_usd_micros: session.maxCostMicros,
          },
        }
      : {}),
  };
}

export function searchEvidenceView(r: SearchEvidenceRecord) {
  return {
    id: r.id,
    object: 'session.search_evidence' as const,
    session_id: r.session_id,
    query: r.query,
    provider: r.provider,
    turn_id: r.turn_id,
    results: r.results,
    created_at: iso(r.created_at),
  };
}
