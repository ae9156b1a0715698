/**
 * The hashed form of a chain leaf and its hash. Each project's log is a hash chain:
 * `hash = sha256(prev_hash + canonical(event))`, the first leaf's prev_hash is `GENESIS_HASH`.
 * A call record with a lifecycle is a leaf of the same chain, hashed as one event-shaped leaf
 * (`canonicalRecord`: `recordLeafEvent` of src/executions/record-leaf.ts). The sequencer
 * (src/db/repositories/event-chain.ts), the chain's verification, checkpoints and exports all
 * write leaves through this module, so all of them hash the same bytes.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from './canonical-json';
import { canonicalJsonbText } from './canonical-jsonb';
import type { EventRecord } from './types';
import type { StoredRecordLeaf } from '../db/repositories/record-leaves';
import { recordLeafParts } from '../executions/record-leaf';

export const GENESIS_HASH = '0'.repeat(64);

/**
 * The hashed content of an event: every column except `hash` itself, as RFC 8785 JSON — exactly
 * `canonicalize({ seq, id, project_id, timestamp, ... prev_hash })`, written out field by field in
 * the sorted key order RFC 8785 gives them (`canonicalForm`), with `canonicalJson`
 * (src/events/canonical-json.ts) for the metadata's own JSON.
 * The sequencer hashes every event, and the generic form (sorting every key, building the object
 * and its intermediate strings) was a large share of what a governed call allocated. `prevHash`
 * overrides `e.prev_hash` (the sequencer hashes rows it is about to link). Equality with the
 * generic form is checked by test/unit/events/canonical-event.test.ts.
 */
export function canonicalEvent(e: Omit<EventRecord, 'hash'>, prevHash: string | null = e.prev_hash): string {
  return canonicalForm(e, canonicalJson(e.metadata ?? {}), new Date(e.timestamp).toISOString(), prevHash);
}

/** The columns of an event that the canonical form holds as they are: JSON strings (or null), and the seq. */
type CanonicalStrings = Pick<EventRecord, 'event_type' | 'id' | 'job_id' | 'model' | 'permit_id' | 'phase' | 'project_id' | 'provider' | 'request_id' | 'session_id' | 'source'> & {
  seq: string | number;
};

/**
 * The one writer of the canonical form: the members in RFC 8785's key order, strings as
 * JSON.stringify writes them (RFC 8785's string form), `metadata` already canonical. An undefined
 * `prevHash` leaves its member out, as canonicalize leaves out an undefined value.
 */
function canonicalForm(e: CanonicalStrings, metadata: string, timestamp: string, prevHash: string | null | undefined): string {
  const j = JSON.stringify;
  const seq = Number(e.seq);
  const link = prevHash === undefined ? '' : `,"prev_hash":${j(prevHash)}`;
  return (
    `{"event_type":${j(e.event_type)},"id":${j(e.id)},"job_id":${j(e.job_id ?? null)},"metadata":${metadata},"model":${j(e.model ?? null)}` +
    `,"permit_id":${j(e.permit_id ?? null)},"phase":${j(e.phase)}${link},"project_id":${j(e.project_id)},"provider":${j(e.provider ?? null)}` +
    `,"request_id":${j(e.request_id ?? null)},"seq":${seq},"session_id":${j(e.session_id ?? null)},"source":${j(e.source)},"timestamp":${j(timestamp)}}`
  );
}

/**
 * An event's columns as the sequencer reads them to hash a stored event without a whole row
 * (`CANONICAL_COLUMNS_SQL` of src/db/repositories/canonical-columns.ts).
 */
export interface CanonicalColumns {
  seq: string | number;
  event_type: string;
  id: string;
  job_id: string | null;
  /** jsonb's text of the metadata. */
  metadata: string;
  model: string | null;
  permit_id: string | null;
  phase: string;
  project_id: string;
  provider: string | null;
  request_id: string | null;
  session_id: string | null;
  source: string;
  /** NULL for a timestamp outside years 1–9999: use `canonicalEvent` on the whole row. */
  timestamp_ms: string | null;
}

/** `canonicalEvent(row, prevHash)` from `CANONICAL_COLUMNS_SQL`'s columns; null when they cannot carry it (a timestamp outside years 1–9999). */
export function canonicalFromColumns(c: CanonicalColumns, prevHash: string | null): string | null {
  if (c.timestamp_ms === null) return null;
  return canonicalForm(c, canonicalMetadata(c.metadata), new Date(Number(c.timestamp_ms)).toISOString(), prevHash);
}

/**
 * Canonical metadata by its jsonb text, written from the text without parsing it
 * (`canonicalJsonbText`: exports and archives write every event of a window). A governed call's events repeat a few metadata values,
 * and parsing and canonicalising each one again was a visible share of the sequencer's time per
 * event. Short texts only, and at most METADATA_CACHE_SIZE of them (cleared when full), so the
 * cache stays small whatever callers put in request metadata.
 */
const metadataCache = new Map<string, string>();
const METADATA_CACHE_SIZE = 4096;
const METADATA_CACHE_MAX_CHARS = 512;

function canonicalMetadata(text: string): string {
  const cached = metadataCache.get(text);
  if (cached !== undefined) return cached;
  const canonical = canonicalJsonbText(text);
  if (text.length <= METADATA_CACHE_MAX_CHARS) {
    if (metadataCache.size >= METADATA_CACHE_SIZE) metadataCache.clear();
    metadataCache.set(text, canonical);
  }
  return canonical;
}

/**
 * The canonical form of a call record's leaf: its record and permit as one event
 * (`recordLeafEvent`), linked to `prevHash`. Written from the stored rows each time, so an edit
 * of any column the leaf carries changes it.
 */
export function canonicalRecord(r: StoredRecordLeaf, prevHash: string | null): string {
  // canonicalEvent of recordLeafEvent's event, its metadata canonicalised once (not written,
  // parsed back and written again): test/unit/events/canonical-event.test.ts checks they agree.
  const e = recordLeafParts(r.row, r.permit);
  return canonicalForm(e, e.metadataCanonical, e.timestamp.toISOString(), prevHash);
}

export function eventHash(prevHash: string, canonical: string): string {
  // The one-shot form: no Hash object per event, on the sequencer's hottest loop.
  return hash('sha256', prevHash + canonical, 'hex');
}
