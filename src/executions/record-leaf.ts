/**
 * A call record as one leaf of its project's hash chain (src/events/canonical.ts hashes it as it
 * hashes any event).
 */
import { canonicalJson } from '../events/canonical-json';
import type { EventRecord } from '../events/types';
import { permitDecision, type PermitColumns, type RecordColumns } from './lifecycle';

const iso = (d: Date | string) => new Date(d).toISOString();

/** A record's leaf event with its metadata already in canonical form (RFC 8785 JSON text). */
export type RecordLeafParts = Omit<EventRecord, 'prev_hash' | 'hash' | 'metadata'> & { metadataCanonical: string };

/**
 * The call record as one chain leaf: an event-shaped object (`call.recorded`) whose metadata is
 * the record's persisted columns and the permit decision its events derive from, so the chain,
 * the Merkle log, exports and both offline verifiers hash and check it as they do any event
 * (canonicalEvent in src/events/canonical.ts). Editing any of these columns breaks the leaf.
 */
export function recordLeafEvent(
  row: RecordColumns & Record<string, unknown>,
  permit: PermitColumns | null,
): Omit<EventRecord, 'prev_hash' | 'hash'> {
  const { metadataCanonical, ...event } = recordLeafParts(row, permit);
  return { ...event, metadata: JSON.parse(metadataCanonical) as Record<string, unknown> };
}

/**
 * `recordLeafEvent` with the metadata left as the canonical text it is written from: what the
 * leaf's bytes are made of (`canonicalRecord`), without parsing it back only to canonicalise it
 * again (canonical JSON read and canonicalised again is the same text).
 */
export function recordLeafParts(row: RecordColumns & Record<string, unknown>, permit: PermitColumns | null): RecordLeafParts {
  const columns: Record<string, unknown> = {};
  for (const k of Object.keys(row)) {
    if (LEAF_EXCLUDED.has(k)) continue;
    const v = row[k];
    columns[LEAF_MEMBER_OF_COLUMN.get(k) ?? k] = v instanceof Date ? v.toISOString() : typeof v === 'bigint' ? Number(v) : v;
  }
  const decision = permit
    ? {
        ...permitDecision(permit),
        reserved_cost_micros: Number(permit.reserved_cost_micros),
        issued_at: iso(permit.issued_at),
        expires_at: permit.expires_at ? iso(permit.expires_at) : null,
        firewall: (permit.metadata?.decision_metadata as { firewall?: unknown } | undefined)?.firewall ?? null,
      }
    : null;
  // Numeric strings (pg returns bigint columns as text) are written as numbers, as the row holds them.
  for (const k of NUMERIC_COLUMNS) if (typeof columns[k] === 'string') columns[k] = Number(columns[k]);
  return {
    seq: Number(row.seq),
    id: row.id,
    project_id: row.project_id,
    timestamp: new Date(row.completed_at),
    event_type: RECORD_LEAF_EVENT_TYPE,
    source: 'calls',
    phase: 'record',
    provider: row.provider,
    model: row.model,
    permit_id: row.permit_id,
    request_id: row.id,
    job_id: row.job_id ?? null,
    session_id: null,
    metadataCanonical: canonicalJson({ record: columns, permit: decision }),
  };
}

export const RECORD_LEAF_EVENT_TYPE = 'call.recorded';

/**
 * Columns renamed after records were chained, and the member each is hashed under: the leaf keeps
 * the name the column had, so every leaf chained before the rename still verifies (and the
 * offline verifiers, which read members, not columns, need no change).
 */
const LEAF_MEMBER_OF_COLUMN = new Map([['intent_id', 'workflow_intent_id']]);

/** Columns the leaf carries elsewhere (id, project, seq, provider, model, permit, job, completed_at) or that are not the call's (recorded_at). */
const LEAF_EXCLUDED = new Set(['id', 'project_id', 'seq', 'provider', 'model', 'permit_id', 'job_id', 'completed_at', 'recorded_at', 'chain_pos', 'prev_hash', 'hash']);
const NUMERIC_COLUMNS = ['cost_usd_micros', 'input_tokens', 'output_tokens', 'total_tokens', 'status_code', 'duration_ms'];
