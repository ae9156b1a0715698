/**
 * The chain sequencer: links each project's pending log entries into its hash chain
 * (src/events/canonical.ts).
 *
 * Events are inserted unchained (`tollgate_insert_batch_events`, no lock) and queued in
 * `event_chain_pending`, so the request path never waits on the chain; the sequencer
 * (`chainEvents`, run by src/events/sequencer.ts) chains each project's pending entries in `seq`
 * order under a per-project lock, all projects in one transaction, writing `event_chain` rows
 * (chain_pos, prev_hash, hash, and the entry's Merkle leaf hash, which the checkpoint builds its
 * tree from). An event row is never updated. Readers use the `events_chained` view: timelines read
 * events by `seq` whether or not they are chained yet; verification walks `chain_pos`.
 *
 * A call record with a lifecycle (a `calls` row with a `seq`) is a leaf of the same chain:
 * `tollgate_record_calls` queues its seq in `event_chain_pending` like an event's, and the
 * sequencer chains it among the project's events in seq order as one event-shaped leaf
 * (`recordLeafCanonical`, written from the record's columns and jsonb text as verification writes
 * it). `event_chain.seq` is then the record's seq, which no event row holds.
 */
import type { Pool, PoolClient } from 'pg';
import type { Queryable } from '../pool';
import { eventHash, GENESIS_HASH, type CanonicalColumns } from '../../events/canonical';
import { leafHashHex } from '../../integrity/hashes';
import { CANONICAL_COLUMNS_SQL, canonicalOfStored } from './canonical-columns';
import { readRecordLeafSources, recordLeafCanonical, recordLeafSourceKey, type RecordLeafSource } from './record-leaf-text';
import { foldCalls, isTerminalEvent } from './call-rollup';

/** Lock class of the per-project chain sequencer (pg_try_advisory_xact_lock(class, hashtext(project))). */
export const CHAIN_LOCK_CLASS = 7_301;

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
 * for all: with a statement set per project, busy projects each cost a chaining transaction every
 * round, a large share of PostgreSQL's CPU per call (docs/decisions/event-hash-chain.md).
 */
export async function chainEvents(db: Pool, projectIds: string[], batch = 500): Promise<ChainedRound> {
  if (projectIds.length === 0) return { events: 0, fullProjects: [] };
  const perProject = Math.max(4, Math.ceil(batch / projectIds.length));
  const client = await db.connect();
  try {
    // No sequential scans in this transaction: the rendering query's `seq = ANY` of a full batch
    // against a young table (few events, or no statistics yet) was
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
      // escapes every element, a measurable cost per event of this process's CPU).
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
  record: RecordLeafSource;
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
      ids.push(recordLeafSourceKey(l.record).id);
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
  return (await readRecordLeafSources(client, keyProjects, keySeqs))
    .map((record) => ({ seq: recordLeafSourceKey(record).seq, pn: numberOf.get(record.project_id)!, record }))
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
    // Hashing a full batch holds this thread for a while: let the request path in between.
    if (i > 0 && i % HASH_SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const first = r.pn !== pn;
    if (first) {
      pn = r.pn;
      const head = headOf(pn);
      prev = head?.hash ?? GENESIS_HASH;
      pos = Number(head?.chain_pos ?? 0);
    }
    const canonical = 'record' in r ? recordLeafCanonical(r.record, prev) : await canonicalOfStored(client, r, prev);
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
