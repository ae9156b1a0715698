import type { EventRecord, NewEvent } from '../../events/types';
import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Pool, PoolClient } from 'pg';
import { Queryable } from '../pool';
import { newId } from '../../ids';
import { leafHash, leafHashHex } from '../../integrity/merkle';
import { recordLeafEvent } from '../../executions/lifecycle';
import { readRecordLeaves, type StoredRecordLeaf } from './record-leaves';
import { logAnchor } from './archives';
import { foldCalls, isTerminalEvent } from './call-rollup';

/**
 * The append-only event log timelines are rebuilt from. Each project has its own hash chain:
 * `hash = sha256(prev_hash + canonical(event))`, the first event's prev_hash is 64 zeros.
 *
 * Events are inserted unchained (`tollgate_insert_batch_events`, no lock) and queued in
 * `event_chain_pending`, so the request path never waits on the chain; the sequencer
 * (`chainEvents`, run by src/events/chainer.ts about every 250 ms) chains each project's
 * pending events in `seq` order under a per-project lock, all projects in one transaction,
 * writing `event_chain` rows (chain_pos, prev_hash, hash, migration 0103; and the event's Merkle
 * leaf hash, migration 0115, which the checkpoint builds its tree from). An event row is never
 * updated. Readers use the `events_chained` view: timelines read events by `seq` whether or not
 * they are chained yet; verification walks `chain_pos`.
 *
 * A call record with a lifecycle (an `executions` row with a `seq`, migration 0170) is a leaf of
 * the same chain: `tollgate_finish_calls` queues its seq in `event_chain_pending` like an event's,
 * and the sequencer chains it among the project's events in seq order as one event-shaped leaf
 * (`canonicalRecord`: `recordLeafEvent` of src/executions/lifecycle.ts). `event_chain.seq` is then
 * the record's seq, which no event row holds.
 *
 * Size: the events table and its chain are one aggregate (insert, chain, verify, read).
 */

export const GENESIS_HASH = '0'.repeat(64);

export type { EventRecord, NewEvent } from '../../events/types';

/**
 * The hashed content of an event: every column except `hash` itself, as RFC 8785 JSON — exactly
 * `canonicalize({ seq, id, project_id, timestamp, ... prev_hash })`, written out field by field in
 * the sorted key order RFC 8785 gives them (`canonicalForm`), with `canonicalize` kept for the
 * metadata's own JSON.
 * The sequencer hashes every event, and the generic form (sorting 15 keys, building the object and
 * its intermediate strings) was a third of what a governed call allocated. `prevHash` overrides
 * `e.prev_hash` (the sequencer hashes rows it is about to link). Equality with the generic form is
 * checked by test/unit/events/canonical-event.test.ts.
 */
export function canonicalEvent(e: Omit<EventRecord, 'hash'>, prevHash: string | null = e.prev_hash): string {
  return canonicalForm(e, Number(e.seq), canonicalize(e.metadata ?? {}) as string, new Date(e.timestamp).toISOString(), prevHash);
}

/** The columns of an event that the canonical form holds as JSON strings (or null). */
type CanonicalStrings = Pick<EventRecord, 'event_type' | 'id' | 'job_id' | 'model' | 'permit_id' | 'phase' | 'project_id' | 'provider' | 'request_id' | 'session_id' | 'source'>;

/**
 * The one writer of the canonical form: the members in RFC 8785's key order, strings as
 * JSON.stringify writes them (RFC 8785's string form), `metadata` already canonical. An undefined
 * `prevHash` leaves its member out, as canonicalize leaves out an undefined value.
 */
function canonicalForm(e: CanonicalStrings, seq: number, metadata: string, timestamp: string, prevHash: string | null | undefined): string {
  const j = JSON.stringify;
  const link = prevHash === undefined ? '' : `,"prev_hash":${j(prevHash)}`;
  return (
    `{"event_type":${j(e.event_type)},"id":${j(e.id)},"job_id":${j(e.job_id ?? null)},"metadata":${metadata},"model":${j(e.model ?? null)}` +
    `,"permit_id":${j(e.permit_id ?? null)},"phase":${j(e.phase)}${link},"project_id":${j(e.project_id)},"provider":${j(e.provider ?? null)}` +
    `,"request_id":${j(e.request_id ?? null)},"seq":${seq},"session_id":${j(e.session_id ?? null)},"source":${j(e.source)},"timestamp":${j(timestamp)}}`
  );
}

/**
 * The columns the sequencer reads to hash a stored event without a whole row: each text column as
 * it is, the metadata as jsonb's text, and the timestamp as whole milliseconds since the epoch,
 * floored as a Date parsed from the same value truncates them (NULL outside years 1–9999, where
 * toISOString writes six-digit years: the sequencer then hashes the event from its whole row).
 * PostgreSQL rendered the canonical form itself until 2026-11-26 (to_json per field, to_char): ~8 µs
 * of its CPU per event against ~2 µs for the plain columns (docs/decisions/event-hash-chain.md).
 * test/integration/db/canonical-columns.test.ts checks `canonicalFromColumns` against
 * `canonicalEvent` on stored rows.
 */
export const CANONICAL_COLUMNS_SQL = `
  e.event_type, e.id, e.job_id, e.metadata::text AS metadata, e.model, e.permit_id, e.phase, e.project_id, e.provider,
  e.request_id, e.session_id, e.source,
  CASE WHEN e.timestamp >= '0001-01-01 00:00:00+00' AND e.timestamp < '10000-01-01 00:00:00+00'
       THEN floor(extract(epoch FROM e.timestamp) * 1000)::bigint END AS timestamp_ms`;

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

/** `canonicalEvent(row, prevHash)` from `CANONICAL_COLUMNS_SQL`'s columns; null when it cannot be written from them (see there). */
export function canonicalFromColumns(c: CanonicalColumns, prevHash: string | null): string | null {
  if (c.timestamp_ms === null) return null;
  return canonicalForm(c, Number(c.seq), canonicalMetadata(c.metadata), new Date(Number(c.timestamp_ms)).toISOString(), prevHash);
}

/** The canonical form from the columns, or from the whole stored row where they cannot carry it. */
export async function canonicalOfStored(db: Queryable, c: CanonicalColumns, prevHash: string): Promise<string> {
  return canonicalFromColumns(c, prevHash) ?? canonicalEvent((await db.query<EventRecord>('SELECT * FROM events WHERE seq = $1', [c.seq])).rows[0], prevHash);
}

/**
 * Canonical metadata by its jsonb text. A governed call's events repeat a few metadata values
 * (a pipeline-db run: 606 distinct among 10,256 events), and parsing and canonicalising each one
 * again was ~1.5 µs per event. Short texts only, and at most METADATA_CACHE_SIZE of them (cleared
 * when full), so the cache stays under a few MB whatever callers put in request metadata.
 */
const metadataCache = new Map<string, string>();
const METADATA_CACHE_SIZE = 4096;
const METADATA_CACHE_MAX_CHARS = 512;

function canonicalMetadata(text: string): string {
  const cached = metadataCache.get(text);
  if (cached !== undefined) return cached;
  const canonical = canonicalize(JSON.parse(text)) as string;
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
  return canonicalEvent({ ...recordLeafEvent(r.row, r.permit), prev_hash: prevHash });
}

export function eventHash(prevHash: string, canonical: string): string {
  // The one-shot form: no Hash object per event (~0.4 µs of the sequencer's ~9 µs per event).
  return hash('sha256', prevHash + canonical, 'hex');
}

/** Lock class of the per-project chain sequencer (pg_try_advisory_xact_lock(class, hashtext(project))). */
export const CHAIN_LOCK_CLASS = 7_301;

/** Fields a call's events usually share; `batchEvents` sends each once per call. */
const SHAREABLE_EVENT_FIELDS: readonly string[] = ['timestamp', 'source', 'phase', 'provider', 'model', 'permit_id', 'request_id', 'job_id', 'session_id'];

/**
 * A call's events as the batch statements take them (`tollgate_insert_batch_events`, migration
 * 0107): a field every event of the call has with one value is sent once in `event_defaults`, a
 * null field not at all, and the project id comes from the call. The payload is parsed into jsonb
 * by PostgreSQL (12 % of its CPU at c=32) and serialised by this process, so ~40 % fewer bytes per
 * event count twice.
 */
export function batchEvents(events: NewEvent[]): { events: Record<string, unknown>[]; event_defaults: Record<string, unknown> } {
  const rows = eventRows('', events);
  if (rows.length === 0) return { events: [], event_defaults: {} };
  const shared = new Set(SHAREABLE_EVENT_FIELDS.filter((f) => rows.every((r) => r[f] === rows[0][f])));
  const defaults: Record<string, unknown> = {};
  for (const f of shared) if (rows[0][f] !== null) defaults[f] = rows[0][f];
  const own = rows.map((r) => {
    const o: Record<string, unknown> = {};
    for (const k in r) if (r[k] !== null && k !== 'project_id' && !shared.has(k)) o[k] = r[k];
    return o;
  });
  return { events: own, event_defaults: defaults };
}

/** Events as rows with every column (`batchEvents` sends them compactly). */
export function eventRows(projectId: string, events: NewEvent[]): Record<string, unknown>[] {
  return events.map((e) => ({
      id: newId('evt'),
      // Millisecond precision: what a JS Date carries, so the stored value re-hashes identically.
      timestamp: (e.timestamp ?? new Date()).toISOString(),
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
      project_id: projectId,
    }));
}

/**
 * Appends events, unchained (the sequencer chains them shortly after), in one statement: the
 * insert the batch statements use (`tollgate_insert_batch_events`, migration 0107), one entry per
 * project in order of first appearance, each project's events in their order. On a PoolClient
 * inside a transaction they commit or roll back with it.
 */
export async function appendEvents(db: Queryable, events: NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  const projects = [...new Set(events.map((e) => e.projectId))];
  const calls = projects.map((project) => ({ project, ...batchEvents(events.filter((e) => e.projectId === project)) }));
  await db.query('SELECT tollgate_insert_batch_events($1::jsonb, $2::int[], $3::text[])', [JSON.stringify(calls), calls.map((_, i) => i + 1), ['project']]);
}

export async function appendEvent(db: Queryable, ev: NewEvent): Promise<void> {
  await appendEvents(db, [ev]);
}

/** What one chaining transaction did. */
export interface ChainedBatch {
  /** Leaves chained (events and call records); 0 when another process holds the project's chain lock or nothing is pending. */
  events: number;
  /** The batch was full: more pending statements may be waiting now. */
  full: boolean;
}

/** Events the sequencer hashes between two turns of the event loop. */
const HASH_SLICE = 200;

/** What one chaining transaction over several projects did. */
export interface ChainedRound {
  /** Leaves chained (events and call records), all projects together. */
  events: number;
  /** Projects whose share of the batch was full: more of their pending statements may be waiting. */
  fullProjects: string[];
}

/**
 * Chains the events of one project's pending insert statements (up to `batch` of them), in `seq`
 * order, after the current head.
 */
export async function chainProjectEvents(db: Pool, projectId: string, batch = 500): Promise<ChainedBatch> {
  const r = await chainEvents(db, [projectId], batch);
  return { events: r.events, full: r.fullProjects.length > 0 };
}

/**
 * Chains pending events of several projects in one transaction: each project's events in `seq`
 * order after its own head, up to `max(4, ceil(batch / projects))` pending insert statements per
 * project. Projects another process is chaining (its try-lock taken) are skipped. One transaction
 * for all: with a statement set per project, 32 busy projects cost ~1,000 chaining transactions a
 * second (eight statements each), a quarter of PostgreSQL's CPU per call (docs/decisions/event-hash-chain.md).
 */
export async function chainEvents(db: Pool, projectIds: string[], batch = 500): Promise<ChainedRound> {
  if (projectIds.length === 0) return { events: 0, fullProjects: [] };
  const perProject = Math.max(4, Math.ceil(batch / projectIds.length));
  const client = await db.connect();
  try {
    // No sequential scans in this transaction: the rendering query's `seq = ANY` of a full batch
    // (~2,500 seqs) against a young table (tens of thousands of events, or no statistics yet) was
    // planned as a scan of the whole events table every round (docs/decisions/event-hash-chain.md).
    await client.query('BEGIN; SET LOCAL enable_seqscan = off');
    // Try-locks in one statement; a project whose lock another sequencer holds is left to it.
    const { rows: locked } = await client.query<{ project_id: string }>(
      'SELECT p AS project_id FROM unnest($2::text[]) WITH ORDINALITY AS t(p, ord) WHERE pg_try_advisory_xact_lock($1, hashtext(p)) ORDER BY ord',
      [CHAIN_LOCK_CLASS, projectIds],
    );
    if (locked.length === 0) {
      await client.query('ROLLBACK');
      return { events: 0, fullProjects: [] };
    }
    const projects = locked.map((l) => l.project_id);
    // Whole pending rows (one per insert statement), so a row is deleted only once all its events are chained.
    // `seqs` as PostgreSQL's array text ("{1,2,3}"): only passed back in the rendering query.
    const { rows: pending } = await client.query<{ project_id: string; first_seq: string; seqs: string }>(
      `SELECT t.p AS project_id, q.first_seq, q.seqs::text AS seqs
         FROM unnest($1::text[]) AS t(p)
        CROSS JOIN LATERAL (SELECT first_seq, seqs FROM event_chain_pending WHERE project_id = t.p ORDER BY first_seq LIMIT $2) q`,
      [projects, perProject],
    );
    if (pending.length === 0) {
      await client.query('ROLLBACK');
      return { events: 0, fullProjects: [] };
    }
    const pendingProjects = pending.map((p) => p.project_id);
    const firstSeqs = pending.map((p) => p.first_seq);
    const pendingOf = new Map<string, number>();
    for (const p of pendingProjects) pendingOf.set(p, (pendingOf.get(p) ?? 0) + 1);
    const fullProjects = [...pendingOf].filter(([, n]) => n === perProject).map(([p]) => p);
    const { rows: heads } = await client.query<{ project_id: string; chain_pos: number; hash: string }>(
      `SELECT t.p AS project_id, h.chain_pos, h.hash
         FROM unnest($1::text[]) AS t(p)
        CROSS JOIN LATERAL (SELECT chain_pos, hash FROM event_chain WHERE project_id = t.p ORDER BY chain_pos DESC LIMIT 1) h`,
      [[...pendingOf.keys()]],
    );
    // A project without chain rows is new, or retention archived and deleted every one of them:
    // then its chain continues from the latest archive's head (docs/decisions/retention-and-archives.md).
    const headless = [...pendingOf.keys()].filter((p) => !heads.some((h) => h.project_id === p));
    if (headless.length > 0) {
      const { rows: archived } = await client.query<{ project_id: string; chain_pos: number; hash: string }>(
        `SELECT DISTINCT ON (project_id) project_id, (last_index + 1)::int8 AS chain_pos, head_hash AS hash
           FROM archives WHERE project_id = ANY($1::text[]) AND status IN ('verified', 'completed')
          ORDER BY project_id, last_index DESC`,
        [headless],
      );
      heads.push(...archived.map((a) => ({ ...a, chain_pos: Number(a.chain_pos) })));
    }
    const headOf = new Map(heads.map((h) => [h.project_id, h]));
    // One index scan for every pending seq (`= ANY`, seqscan off above): a join from the pending rows' arrays was
    // estimated so loosely that the planner chose a hash join over all of `events` once the batch
    // spanned projects (docs/decisions/event-hash-chain.md). Rows carry their
    // project's place in `projects` (1-based, as SQL arrays are) and sort by it.
    const seqLists = pending.map((p) => p.seqs.slice(1, -1)).filter((s) => s !== '');
    const { rows } = await client.query<PendingEvent>(
      `SELECT e.seq, array_position($2::text[], e.project_id) AS pn, ${CANONICAL_COLUMNS_SQL}
         FROM events e WHERE e.seq = ANY($1::bigint[])
        ORDER BY 2, e.seq`,
      [arrayText(seqLists), projects],
    );
    // A pending seq no event row holds is a call record's: the round's records are read in one
    // statement, and only when the events did not account for every pending seq.
    const leaves = rows.length === seqCount(seqLists) ? rows : mergeInOrder(rows, await pendingRecords(client, pending, rows, projects));
    const links = await linkInOrder(client, leaves, (pn) => headOf.get(projects[pn - 1]));
    await client.query(
      `INSERT INTO event_chain (seq, project_id, chain_pos, prev_hash, hash, leaf_hash)
       SELECT v.seq, ($6::text[])[v.pn], v.pos, coalesce(v.head, lag(v.hash) OVER (ORDER BY v.ord)), v.hash, decode(v.leaf, 'hex')
         FROM unnest($1::bigint[], $2::text[], $3::int[], $4::bigint[], $5::text[], $7::text[]) WITH ORDINALITY AS v(seq, hash, pn, pos, head, leaf, ord)`,
      // Numbers and hex digests need no quoting: the arrays' text is joined here (pg's serializer
      // escapes every element, ~2 µs per event of this process's CPU).
      [arrayText(links.seqs), arrayText(links.hashes), arrayText(links.projectNumbers), arrayText(links.chainPos), arrayText(links.linkTo.map((h) => h ?? 'NULL')), projects, arrayText(links.leafHashes)],
    );
    await client.query(
      'DELETE FROM event_chain_pending p USING unnest($1::text[], $2::bigint[]) AS k(project_id, first_seq) WHERE p.project_id = k.project_id AND p.first_seq = k.first_seq',
      [pendingProjects, firstSeqs],
    );
    // The round's call records into the Overview's rollup, in the transaction that chains them:
    // exactly once, and never on the request path (src/db/repositories/call-rollup.ts).
    const fold = recordsOf(leaves);
    await foldCalls(client, fold.projectIds, fold.ids);
    await client.query('COMMIT');
    return { events: leaves.length, fullProjects };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** A pending event as the sequencer reads it: its canonical columns and its project's number in the round. */
type PendingEvent = CanonicalColumns & { seq: string; pn: number };

/** A pending call record: its row and permit, and its project's number in the round. */
interface PendingRecord {
  seq: string;
  pn: number;
  record: StoredRecordLeaf;
}

type PendingLeaf = PendingEvent | PendingRecord;

/**
 * The call records a round chains: a record with a lifecycle by its leaf, any other by its
 * terminal event (whose request_id is the record's id).
 */
function recordsOf(leaves: PendingLeaf[]): { projectIds: string[]; ids: string[] } {
  const projectIds: string[] = [];
  const ids: string[] = [];
  for (const l of leaves) {
    if ('record' in l) {
      projectIds.push(l.record.project_id);
      ids.push(String(l.record.row.id));
    } else if (isTerminalEvent(l)) {
      projectIds.push(l.project_id);
      ids.push(l.request_id!);
    }
  }
  return { projectIds, ids };
}

/** Elements of PostgreSQL array texts without their braces ("1,2,3"). */
function seqCount(lists: string[]): number {
  let n = 0;
  for (const l of lists) n += l.split(',').length;
  return n;
}

/**
 * The call records among the round's pending seqs (those no event row answered for), ordered as
 * the events are: by the project's number in the round, then seq. A seq that is neither an event's
 * nor a record's (its row deleted before it was chained) is left out, as a missing event is.
 */
async function pendingRecords(client: PoolClient, pending: { project_id: string; seqs: string }[], events: PendingEvent[], projects: string[]): Promise<PendingRecord[]> {
  const found = new Set(events.map((e) => String(e.seq)));
  const keyProjects: string[] = [];
  const keySeqs: string[] = [];
  for (const p of pending) {
    for (const seq of p.seqs.slice(1, -1).split(',')) {
      if (seq !== '' && !found.has(seq)) {
        keyProjects.push(p.project_id);
        keySeqs.push(seq);
      }
    }
  }
  const numberOf = new Map(projects.map((p, i) => [p, i + 1]));
  return (await readRecordLeaves(client, keyProjects, keySeqs))
    .map((record) => ({ seq: record.seq, pn: numberOf.get(record.project_id)!, record }))
    .sort((a, b) => a.pn - b.pn || Number(a.seq) - Number(b.seq));
}

/** Two lists ordered by (project number, seq) as one. */
function mergeInOrder(events: PendingEvent[], records: PendingRecord[]): PendingLeaf[] {
  const out: PendingLeaf[] = [];
  let i = 0;
  let j = 0;
  while (i < events.length || j < records.length) {
    const e = events[i];
    const r = records[j];
    if (r === undefined || (e !== undefined && (e.pn - r.pn || Number(e.seq) - Number(r.seq)) < 0)) {
      out.push(e);
      i += 1;
    } else {
      out.push(r);
      j += 1;
    }
  }
  return out;
}

/** PostgreSQL's array text of elements that need no quoting (numbers, hex digests, NULL). */
function arrayText(elements: ReadonlyArray<string | number>): string {
  return `{${elements.join(',')}}`;
}

/**
 * Hashes the round's events and call records in order (grouped by project number, each group after its project's
 * head): per leaf its hash, leaf hash, project number and chain position, and for the first event of each
 * project the head hash it links to (the others link to the event before them).
 */
async function linkInOrder(client: PoolClient, rows: PendingLeaf[], headOf: (projectNumber: number) => { chain_pos: number; hash: string } | undefined) {
  const out = { seqs: [] as string[], hashes: [] as string[], leafHashes: [] as string[], projectNumbers: [] as number[], chainPos: [] as number[], linkTo: [] as (string | null)[] };
  let pn = 0;
  let prev = GENESIS_HASH;
  let pos = 0;
  for (const [i, r] of rows.entries()) {
    // Hashing a full batch (~2,500 events) takes ~20 ms of this thread: let the request path in between.
    if (i > 0 && i % HASH_SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const first = r.pn !== pn;
    if (first) {
      pn = r.pn;
      const head = headOf(pn);
      prev = head?.hash ?? GENESIS_HASH;
      pos = Number(head?.chain_pos ?? 0);
    }
    const canonical = 'record' in r ? canonicalRecord(r.record, prev) : await canonicalOfStored(client, r, prev);
    const hash = eventHash(prev, canonical);
    out.seqs.push(r.seq);
    out.hashes.push(hash);
    // The checkpoint's leaf for this event, while its canonical form is at hand (src/integrity/log.ts).
    out.leafHashes.push(leafHashHex(canonical));
    out.projectNumbers.push(pn);
    out.chainPos.push((pos += 1));
    out.linkTo.push(first ? prev : null);
    prev = hash;
  }
  return out;
}

/** Projects that have events waiting to be chained. */
export async function projectsWithUnchainedEvents(db: Queryable, limit = 500): Promise<string[]> {
  const { rows } = await db.query<{ project_id: string }>(
    'SELECT DISTINCT project_id FROM event_chain_pending LIMIT $1',
    [limit],
  );
  return rows.map((r) => r.project_id);
}

/** Chains every pending event of a project (loops over batches; waits while another process holds the lock). */
export async function chainAllProjectEvents(db: Pool, projectId: string): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    const { events } = await chainProjectEvents(db, projectId);
    if (events > 0) continue;
    const { rows } = await db.query('SELECT 1 FROM event_chain_pending WHERE project_id = $1 LIMIT 1', [projectId]);
    if (rows.length === 0) return;
    await new Promise((r) => setTimeout(r, 20)); // another process is chaining this project
  }
}

/**
 * Whether a request has a stored event of this type (e.g. provider.request_sent: the call may have
 * reached the provider). A pipeline call's events are not stored: its dispatch start says it.
 */
export async function requestHasEvent(db: Queryable, projectId: string, requestId: string, eventType: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM events WHERE project_id = $1 AND request_id = $2 AND event_type = $3 LIMIT 1', [projectId, requestId, eventType]);
  return (rowCount ?? 0) > 0;
}

/**
 * Stored event rows of a request, by seq. A pipeline call's events are derived from its record, not
 * stored: readers use log-events.ts's requestEvents, which merges both.
 */
export async function listEventsByRequest(db: Queryable, projectId: string, requestId: string): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    'SELECT * FROM events_chained WHERE project_id = $1 AND request_id = $2 ORDER BY seq',
    [projectId, requestId],
  );
  return rows;
}

/** Stored event rows of a permit, by seq (readers: log-events.ts's permitsEvents, which adds the derived ones). */
export async function listEventsByPermit(db: Queryable, projectId: string, permitId: string): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    'SELECT * FROM events_chained WHERE project_id = $1 AND permit_id = $2 ORDER BY seq',
    [projectId, permitId],
  );
  return rows;
}

/** Stored event rows of a project after a seq (the governance list, log-events.ts's listLogEvents, adds the derived ones). */
export async function listEvents(
  db: Queryable,
  projectId: string,
  opts: { afterSeq?: number; limit?: number; eventType?: string } = {},
): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    `SELECT * FROM events_chained WHERE project_id = $1 AND seq > $2 AND ($3::text IS NULL OR event_type = $3)
     ORDER BY seq LIMIT $4`,
    [projectId, opts.afterSeq ?? 0, opts.eventType ?? null, Math.min(opts.limit ?? 100, 1000)],
  );
  return rows;
}

export interface ChainVerification {
  ok: boolean;
  count: number;
  /** seq of the first event or call record whose prev_hash, hash or leaf hash does not verify. */
  broken_at_seq: number | null;
  head_hash: string;
}

/**
 * Brings the project's chain up to date (chains pending events and records), then recomputes it
 * from the genesis hash in `chain_pos` order, each leaf's stored leaf hash with it: an event from
 * its row, a call record from its execution row and permit (`canonicalRecord`). Any edited, removed
 * or reordered row breaks it; so does an event or record with a seq that is neither chained nor
 * waiting to be.
 */
export async function verifyEventChain(db: Pool, projectId: string): Promise<ChainVerification> {
  await chainAllProjectEvents(db, projectId);
  // Records archived by retention are verified by their archive: the chain continues from its head.
  const anchor = await logAnchor(db, projectId);
  let prev = anchor?.headHash ?? GENESIS_HASH;
  let count = 0;
  let afterPos = anchor?.position ?? 0;
  const archivedSeq = anchor?.lastSeq ?? '-1';
  for (;;) {
    // From the chain's side, so an event row deleted after chaining is a gap (e.seq IS NULL).
    const { rows } = await db.query<Omit<EventRecord, 'seq'> & { seq: number | null; chain_seq: string; chain_pos: number; leaf_hash: Buffer | null }>(
      `SELECT e.*, c.seq AS chain_seq, c.chain_pos, c.prev_hash, c.hash, c.leaf_hash
         FROM event_chain c LEFT JOIN events e ON e.seq = c.seq
        WHERE c.project_id = $1 AND c.chain_pos > $2 ORDER BY c.chain_pos LIMIT 1000`,
      [projectId, afterPos],
    );
    if (rows.length === 0) break;
    // Positions no event row answers for are call records' (or gaps): their rows in one statement.
    const notEvents = rows.filter((r) => r.seq === null).map((r) => r.chain_seq);
    const records = new Map((await readRecordLeaves(db, notEvents.map(() => projectId), notEvents)).map((r) => [r.seq, r]));
    for (const r of rows) {
      const broken = { ok: false, count, broken_at_seq: Number(r.chain_seq), head_hash: prev };
      let canonical: string;
      if (r.seq !== null) {
        if (r.project_id !== projectId) return broken;
        canonical = canonicalEvent({ ...r, seq: r.seq, prev_hash: prev });
      } else {
        const record = records.get(String(r.chain_seq));
        if (!record) return broken;
        canonical = canonicalRecord(record, prev);
      }
      // The leaf hash the sequencer stored (migration 0115) is what checkpoints sign: it must be this leaf's too.
      if (r.prev_hash !== prev || r.hash !== eventHash(prev, canonical) || (r.leaf_hash !== null && !r.leaf_hash.equals(leafHash(canonical)))) return broken;
      prev = r.hash;
      count += 1;
      afterPos = Number(r.chain_pos);
    }
  }
  // An event or call record neither chained nor waiting to be: its chain row was removed.
  const { rows: orphans } = await db.query<{ seq: string }>(
    `(SELECT e.seq FROM events e
       WHERE e.project_id = $1 AND e.seq > $2
         AND NOT EXISTS (SELECT 1 FROM event_chain c WHERE c.seq = e.seq)
         AND NOT EXISTS (SELECT 1 FROM event_chain_pending p WHERE p.project_id = e.project_id AND e.seq = ANY(p.seqs))
       ORDER BY e.seq LIMIT 1)
     UNION ALL
     (SELECT x.seq FROM executions x
       WHERE x.project_id = $1 AND x.seq > $2
         AND NOT EXISTS (SELECT 1 FROM event_chain c WHERE c.seq = x.seq)
         AND NOT EXISTS (SELECT 1 FROM event_chain_pending p WHERE p.project_id = x.project_id AND x.seq = ANY(p.seqs))
       ORDER BY x.seq LIMIT 1)
     ORDER BY seq LIMIT 1`,
    [projectId, archivedSeq],
  );
  if (orphans.length > 0) return { ok: false, count, broken_at_seq: Number(orphans[0].seq), head_hash: prev };
  return { ok: true, count, broken_at_seq: null, head_hash: prev };
}

/** Stored event rows of several permits, by seq (readers: log-events.ts's permitsEvents, which adds the derived ones). */
export async function listEventsForPermits(db: Queryable, projectId: string, permitIds: string[]): Promise<EventRecord[]> {
  if (permitIds.length === 0) return [];
  const { rows } = await db.query<EventRecord>(
    'SELECT * FROM events_chained WHERE project_id = $1 AND permit_id = ANY($2::text[]) ORDER BY seq',
    [projectId, permitIds],
  );
  return rows;
}
