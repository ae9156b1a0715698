import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { PoolClient } from 'pg';
import { Queryable } from '../pool';
import { newId } from '../../ids';

/**
 * The append-only event log timelines are rebuilt from. Each project has its own hash chain:
 * `hash = sha256(prev_hash + canonical(event))`, the first event's prev_hash is 64 zeros. Appends
 * for one project are serialised with `pg_advisory_xact_lock(hashtext(project_id))` so the chain
 * stays linear under concurrency; `seq` (bigserial) orders events.
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

/**
 * Appends several events in one transaction (one lock and one chain-head read per project).
 * Pass a Pool to get a transaction of its own; a PoolClient must already be inside a transaction
 * (the chain lock is transaction-scoped), and the events commit or roll back with it.
 */
export async function appendEvents(db: Queryable, events: NewEvent[]): Promise<EventRecord[]> {
  if (events.length === 0) return [];
  return inTransaction(db, async (q) => {
    const projects = [...new Set(events.map((e) => e.projectId))].sort();
    const heads = new Map<string, string>();
    for (const projectId of projects) {
      await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [projectId]);
      const { rows } = await q.query<{ hash: string }>(
        'SELECT hash FROM events WHERE project_id = $1 ORDER BY seq DESC LIMIT 1',
        [projectId],
      );
      heads.set(projectId, rows[0]?.hash ?? GENESIS_HASH);
    }
    const { rows: seqRows } = await q.query<{ seq: string | number }>(
      "SELECT nextval(pg_get_serial_sequence('events', 'seq')) AS seq FROM generate_series(1, $1)",
      [events.length],
    );
    const seqs = seqRows.map((r) => Number(r.seq)).sort((a, b) => a - b);
    const records: EventRecord[] = events.map((e, i) => {
      const prev = heads.get(e.projectId)!;
      const base: Omit<EventRecord, 'hash'> = {
        seq: seqs[i],
        id: newId('evt'),
        project_id: e.projectId,
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
        prev_hash: prev,
      };
      const hash = eventHash(prev, canonicalEvent(base));
      heads.set(e.projectId, hash);
      return { ...base, hash };
    });
    const cols = ['seq', 'id', 'project_id', 'timestamp', 'event_type', 'source', 'phase', 'provider', 'model', 'permit_id', 'request_id', 'job_id', 'session_id', 'metadata', 'prev_hash', 'hash'] as const;
    const params: unknown[] = [];
    const tuples = records.map((r) => {
      const ph = cols.map((c) => {
        params.push(c === 'metadata' ? JSON.stringify(r.metadata) : r[c]);
        return `$${params.length}`;
      });
      return `(${ph.join(', ')})`;
    });
    await q.query(`INSERT INTO events (${cols.join(', ')}) VALUES ${tuples.join(', ')}`, params);
    return records;
  });
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
