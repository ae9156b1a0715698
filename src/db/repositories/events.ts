import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { PoolClient } from 'pg';
import { Queryable } from '../pool';
import { newId } from '../../ids';

/**
 * The append-only event log timelines are rebuilt from. Each project has its own hash chain:
 * `hash = sha256(prev_hash + canonical(event))`, the first event's prev_hash is 64 zeros. Appends
 * for one project are serialised with `pg_advisory_xact_lock(hashtext(project_id))` (taken in
 * `tollgate_append_events`, migration 0090) so the chain stays linear under concurrency; `seq`
 * (bigserial, drawn under that lock) orders events.
 */

export const GENESIS_HASH = '0'.repeat(64);

export interface NewEvent {
  projectId: string;
  eventType: string;
  source: string;
  phase: string;
  provider?: string | null;
  model?: string | null;
  permitId?: string | null;
  requestId?: string | null;
  jobId?: string | null;
  sessionId?: string | null;
  metadata?: Record<string, unknown>;
  timestamp?: Date;
}

export interface EventRecord {
  seq: number;
  id: string;
  project_id: string;
  timestamp: Date;
  event_type: string;
  source: string;
  phase: string;
  provider: string | null;
  model: string | null;
  permit_id: string | null;
  request_id: string | null;
  job_id: string | null;
  session_id: string | null;
  metadata: Record<string, unknown>;
  prev_hash: string;
  hash: string;
}

/** The hashed content of an event: every column except `hash` itself. */
export function canonicalEvent(e: Omit<EventRecord, 'hash'>): string {
  return canonicalize({
    seq: Number(e.seq),
    id: e.id,
    project_id: e.project_id,
    timestamp: new Date(e.timestamp).toISOString(),
    event_type: e.event_type,
    source: e.source,
    phase: e.phase,
    provider: e.provider ?? null,
    model: e.model ?? null,
    permit_id: e.permit_id ?? null,
    request_id: e.request_id ?? null,
    job_id: e.job_id ?? null,
    session_id: e.session_id ?? null,
    metadata: e.metadata ?? {},
    prev_hash: e.prev_hash,
  }) as string;
}

export function eventHash(prevHash: string, canonical: string): string {
  return createHash('sha256').update(prevHash + canonical).digest('hex');
}

function isPool(db: Queryable): boolean {
  // A pg Pool hands out clients; a PoolClient (already inside a caller's transaction) has release().
  return typeof (db as { connect?: unknown }).connect === 'function' && typeof (db as { release?: unknown }).release !== 'function';
}

async function inTransaction<T>(db: Queryable, fn: (q: Queryable) => Promise<T>): Promise<T> {
  if (!isPool(db)) return fn(db);
  const client: PoolClient = await (db as unknown as { connect(): Promise<PoolClient> }).connect();
  try {
    await client.query('BEGIN');
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

const PREV_MARK = 'PREV_HASH_PLACEHOLDER';
const PREV_TOKEN = `"prev_hash":"${PREV_MARK}"`;
const SEQ_TOKEN = ',"seq":0,"session_id":';

/**
 * Splits an event's canonical JSON around its prev_hash and seq values, which only the database
 * knows at append time (tollgate_append_events). Both are top-level members that sort after
 * `metadata`, and a string value cannot contain their unescaped quotes, so the last match is the
 * member itself.
 */
function canonicalParts(base: Omit<EventRecord, 'hash' | 'seq' | 'prev_hash'>): { c_a: string; c_b: string; c_c: string } {
  const c = canonicalEvent({ ...base, seq: 0, prev_hash: PREV_MARK });
  const p = c.lastIndexOf(PREV_TOKEN);
  const q = c.lastIndexOf(SEQ_TOKEN);
  const prevAt = p + PREV_TOKEN.length - PREV_MARK.length - 1;
  const seqAt = q + ',"seq":'.length;
  return { c_a: c.slice(0, prevAt), c_b: c.slice(prevAt + PREV_MARK.length, seqAt), c_c: c.slice(seqAt + 1) };
}

/**
 * One project's events as `tollgate_append_events` takes them (JSON array; migration 0090), plus
 * their hashed columns except seq, prev_hash and hash, which the database fills in.
 */
export function chainPayload(projectId: string, events: NewEvent[]): { json: string; bases: Omit<EventRecord, 'hash' | 'seq' | 'prev_hash'>[] } {
  const bases = events.map((e) => ({
    id: newId('evt'),
    project_id: projectId,
    // Millisecond precision: what a JS Date carries, so the stored value re-hashes identically.
    timestamp: new Date((e.timestamp ?? new Date()).getTime()),
    event_type: e.eventType,
    source: e.source,
    phase: e.phase,
    provider: e.provider ?? null,
    model: e.model ?? null,
    permit_id: e.permitId ?? null,
    request_id: e.requestId ?? null,
    job_id: e.jobId ?? null,
    session_id: e.sessionId ?? null,
    metadata: e.metadata ?? {},
  }));
  return { json: JSON.stringify(bases.map((b) => ({ ...b, timestamp: b.timestamp.toISOString(), ...canonicalParts(b) }))), bases };
}

/** Appends one project's events in one statement (chain lock, head, seq and hash in the database). */
async function appendProjectEvents(q: Queryable, projectId: string, events: NewEvent[]): Promise<EventRecord[]> {
  const { json, bases } = chainPayload(projectId, events);
  const { rows } = await q.query<{ out_seq: number; out_prev_hash: string; out_hash: string }>(
    'SELECT out_seq, out_prev_hash, out_hash FROM tollgate_append_events($1, $2::jsonb)',
    [projectId, json],
  );
  return bases.map((b, i) => ({ ...b, seq: Number(rows[i].out_seq), prev_hash: rows[i].out_prev_hash, hash: rows[i].out_hash }));
}

/**
 * Appends events, each project's in one statement (`tollgate_append_events`: chain lock, head read,
 * seq, sha256 and insert in the database, so the chain lock is held for no client round trip).
 * Pass a Pool and the append commits on its own (several projects: in one transaction); a
 * PoolClient must already be inside a transaction (the chain lock is transaction-scoped), and the
 * events commit or roll back with it — and the lock is held until that transaction ends.
 */
export async function appendEvents(db: Queryable, events: NewEvent[]): Promise<EventRecord[]> {
  if (events.length === 0) return [];
  const projects = [...new Set(events.map((e) => e.projectId))].sort();
  const run = async (q: Queryable) => {
    const byProject = new Map<string, EventRecord[]>();
    for (const projectId of projects) {
      byProject.set(projectId, await appendProjectEvents(q, projectId, events.filter((e) => e.projectId === projectId)));
    }
    return events.map((e) => byProject.get(e.projectId)!.shift()!);
  };
  return projects.length === 1 ? run(db) : inTransaction(db, run);
}

export async function appendEvent(db: Queryable, ev: NewEvent): Promise<EventRecord> {
  const [record] = await appendEvents(db, [ev]);
  return record;
}

export async function listEventsByRequest(db: Queryable, projectId: string, requestId: string): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    'SELECT * FROM events WHERE project_id = $1 AND request_id = $2 ORDER BY seq',
    [projectId, requestId],
  );
  return rows;
}

export async function listEventsByPermit(db: Queryable, projectId: string, permitId: string): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    'SELECT * FROM events WHERE project_id = $1 AND permit_id = $2 ORDER BY seq',
    [projectId, permitId],
  );
  return rows;
}

export async function listEvents(
  db: Queryable,
  projectId: string,
  opts: { afterSeq?: number; limit?: number; eventType?: string } = {},
): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    `SELECT * FROM events WHERE project_id = $1 AND seq > $2 AND ($3::text IS NULL OR event_type = $3)
     ORDER BY seq LIMIT $4`,
    [projectId, opts.afterSeq ?? 0, opts.eventType ?? null, Math.min(opts.limit ?? 100, 1000)],
  );
  return rows;
}

export interface ChainVerification {
  ok: boolean;
  count: number;
  /** seq of the first event whose prev_hash or hash does not verify. */
  broken_at_seq: number | null;
  head_hash: string;
}

/** Recomputes the project's chain from the genesis hash; any edited, removed or reordered row breaks it. */
export async function verifyEventChain(db: Queryable, projectId: string): Promise<ChainVerification> {
  let prev = GENESIS_HASH;
  let count = 0;
  let afterSeq = 0;
  for (;;) {
    const { rows } = await db.query<EventRecord>(
      'SELECT * FROM events WHERE project_id = $1 AND seq > $2 ORDER BY seq LIMIT 1000',
      [projectId, afterSeq],
    );
    if (rows.length === 0) break;
    for (const r of rows) {
      const expected = eventHash(prev, canonicalEvent({ ...r, prev_hash: prev }));
      if (r.prev_hash !== prev || r.hash !== expected) {
        return { ok: false, count, broken_at_seq: Number(r.seq), head_hash: prev };
      }
      prev = r.hash;
      count += 1;
      afterSeq = Number(r.seq);
    }
  }
  return { ok: true, count, broken_at_seq: null, head_hash: prev };
}
