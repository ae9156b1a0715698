import type { EventRecord } from '../events/types';
import type { PermitDecision } from '../governance/types';
import { timelineEventView } from '../events/view';
import type { PermitRecord } from '../db/repositories/permits';
import type { AttestationRecord } from '../db/repositories/permit-attestations';
import type { EvidenceRecord } from '../db/repositories/permit-evidence';
import type { UsageReportRecord } from '../db/repositories/permit-usage-reports';
import { decisionFromPermit } from '../governance';

/** Wire shapes of the permit-first API. */

const iso = (d: Date | string | null | undefined): string | null => (d ? new Date(d).toISOString() : null);

export type PermitStatus = 'active' | 'used' | 'released' | 'expired' | 'revoked' | 'denied' | 'throttled' | 'pending_review' | 'attested';

/** Lifecycle status derived from the record at `now` (expiry is derived from expires_at). */
export function permitStatus(p: PermitRecord, now: Date, attested: boolean): PermitStatus {
  if (p.revoked_at) return 'revoked';
  const expired = p.expires_at !== null && new Date(p.expires_at).getTime() <= now.getTime();
  switch (p.decision) {
    case 'deny':
      return 'denied';
    case 'throttle':
      return 'throttled';
    case 'review':
      if (attested) return 'attested';
      return expired ? 'expired' : 'pending_review';
    default:
      if (p.reservation_state === 'settled') return 'used';
      if (p.reservation_state === 'released') return 'released';
      if (p.reservation_state === 'expired' || expired) return 'expired';
      return 'active';
  }
}

/** The spec's permit decision fields (without `permit_id`, which dry runs do not have). */
export function decisionExcerpt(d: PermitDecision) {
  return {
    decision: d.decision,
    reason_code: d.reason_code,
    display_reason: d.display_reason,
    decision_details: d.decision_details,
    actions: d.actions,
    metadata: d.metadata,
    ...(d.retry_after_seconds !== undefined ? { retry_after_seconds: d.retry_after_seconds } : {}),
  };
}

export function permitView(p: PermitRecord, now: Date, opts: { attestation?: AttestationRecord | null } = {}) {
  const d = decisionFromPermit(p);
  const meta = p.metadata ?? {};
  const attestation = opts.attestation ?? null;
  const attestedThis = attestation !== null && attestation.permit_id === p.id;
  return {
    object: 'permit',
    // The spec's decision excerpt.
    permit_id: p.id,
    ...decisionExcerpt(d),
    // The full record.
    id: p.id,
    project_id: p.project_id,
    status: permitStatus(p, now, attestedThis),
    idempotency_key: p.idempotency_key ?? (typeof meta.idempotency_key === 'string' ? meta.idempotency_key : null),
    request_id: p.request_id,
    surface: p.route,
    route: typeof meta.requested_route === 'string' ? meta.requested_route : null,
    operation: p.operation,
    provider: p.provider,
    model: p.model,
    workflow_id: p.workflow_id,
    request_metadata: (meta.request_metadata as Record<string, string> | undefined) ?? {},
    /** The tools the request offered the model, by name (a proxied request's, an execution's provider options, a permit request's `tools`); empty when none. */
    tools: Array.isArray(meta.tools) ? (meta.tools as string[]) : [],
    estimate: {
      input_tokens: p.estimated_input_tokens,
      output_tokens: p.estimated_output_tokens,
      cost_usd_micros: p.estimated_cost_micros === null ? null : Number(p.estimated_cost_micros),
    },
    reservation: {
      state: p.reservation_state,
      reserved_cost_usd_micros: Number(p.reserved_cost_micros),
      settled_at: iso(p.settled_at),
      released_at: iso(p.released_at),
      release_reason: p.release_reason,
    },
    usage:
      p.actual_cost_micros === null
        ? null
        : { input_tokens: p.actual_input_tokens ?? 0, output_tokens: p.actual_output_tokens ?? 0, cost_usd_micros: Number(p.actual_cost_micros) },
    issued_at: iso(p.issued_at),
    expires_at: iso(p.expires_at),
    expired: p.expires_at !== null && new Date(p.expires_at).getTime() <= now.getTime(),
    revocation: p.revoked_at ? { revoked_at: iso(p.revoked_at), revoked_by: p.revoked_by, reason: p.revocation_reason } : null,
    parent_permit_id: p.parent_permit_id,
    lineage_reason: typeof meta.lineage_reason === 'string' ? meta.lineage_reason : null,
    attestation: attestation ? attestationView(attestation) : null,
  };
}
export type PermitView = ReturnType<typeof permitView>;

export function attestationView(a: AttestationRecord) {
  return {
    id: a.id,
    permit_id: a.permit_id,
    child_permit_id: a.child_permit_id,
    attested_by: a.attested_by,
    attested_at: iso(a.attested_at),
    reason: a.reason,
    recorded_at: iso(a.recorded_at),
    recorded_by: a.recorded_by,
  };
}

export function eventView(e: EventRecord, derived = false) {
  return {
    id: e.id,
    // Null for the first events of a call still in flight: they take their seqs when it is recorded.
    seq: e.seq === null || e.seq === undefined ? null : Number(e.seq),
    ...timelineEventView(e),
    metadata: e.metadata,
    /** Null until the sequencer chains the event (well under a second after it is written). */
    prev_hash: e.prev_hash,
    hash: e.hash,
    ...(derived ? { derived: true } : {}),
  };
}
export type EventView = ReturnType<typeof eventView>;

export function evidenceView(e: EvidenceRecord) {
  return {
    object: 'permit_evidence',
    id: e.id,
    permit_id: e.permit_id,
    type: e.type,
    description: e.description,
    uri: e.uri,
    content_sha256: e.content_sha256,
    data: e.data,
    submitted_by: e.submitted_by,
    created_at: iso(e.created_at),
  };
}

export function usageReportView(r: UsageReportRecord) {
  return {
    usage_idempotency_key: r.usage_idempotency_key,
    status: r.status,
    input_tokens: r.input_tokens,
    output_tokens: r.output_tokens,
    billed_cost_usd_micros: Number(r.billed_cost_micros),
    verification: r.verification,
    error: r.error,
    occurred_at: iso(r.occurred_at),
    reported_at: iso(r.reported_at),
  };
}
