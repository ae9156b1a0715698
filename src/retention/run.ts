/**
 * Retention with archives (docs/decisions/retention-and-archives.md): for each project whose
 * retention has passed some of its records, a sealed archive of them in the compliance export
 * format is streamed to the archive store (ARCHIVE_DIR or an S3 bucket, docs/decisions/archive-store.md),
 * read back from there and verified by the offline verifier, recorded, and only then are the
 * project's aged-out rows deleted, in short batches.
 *
 * Every step can be interrupted and run again. An archive row is `building` until its object has
 * verified (nothing is deleted meanwhile; a rerun rebuilds the object, whether the last write was
 * cut short or finished unverified), `verified` while its rows are deleted (a rerun checks the
 * object is still there and resumes the deletion), `completed` after. A project has at most one
 * unfinished archive, and a run always finishes it before planning a new one.
 */
import { createHash } from 'node:crypto';
import type { Config } from '../config';
import type { Db, Queryable } from '../db/pool';
import { withTransaction } from '../db/pool';
import { newId } from '../ids';
import { buildExportPart, deleteExportFiles, exportBundle, finalizeExport } from '../compliance/build';
import { readTar } from '../compliance/tar';
import { verifyExport } from '../compliance/verify-export';
import { archiveStoreOf } from '../archive-store/from-config';
import { findExport, insertExport, updateExport, type ExportPart } from '../db/repositories/compliance-exports';
import { chainAllProjectEvents } from '../db/repositories/event-chain';
import { deleteRollupBefore, moveRollupStart } from '../db/repositories/call-rollup';
import { chainHead, latestCheckpoint } from '../db/repositories/integrity-log';
import {
  addArchiveDeleted,
  insertArchive,
  lastCompletedArchive,
  markArchiveCompleted,
  markArchiveVerified,
  openArchive,
  type ArchiveRow,
} from '../db/repositories/archives';
import { complianceSigner } from '../integrity/keys';
import { dropAgedPartitions } from './partitions';
import { chainedLeaves, issueCheckpoint } from '../integrity/log';
import { appendLeaves } from '../integrity/merkle';
import { verifierKey } from '../integrity/note';

export interface RetentionDeps {
  db: Db;
  config: Pick<Config, 'env' | 'masterKey' | 'databaseUrl' | 'retention' | 'archiveStore'>;
}

export interface RetentionOptions {
  /** One project (an operator's run, e.g. an account closing); default: every project with a retention. */
  projectId?: string;
  /** Cutoff instead of now − the retention (applies to every project the run covers). */
  before?: Date;
  now: Date;
  /** Rows per delete statement. */
  batchSize?: number;
  /**
   * Called after each step (`uploading`: after each piece of the archive handed to the store); a
   * test throws from it to stop a run there, as a killed process would.
   */
  onStep?: (step: 'uploading' | 'archived' | 'verified' | 'batch', archiveId: string) => void | Promise<void>;
}

export interface ProjectRetention {
  project_id: string;
  cutoff: string | null;
  /** `locked`: another process is running retention for the project. */
  outcome: 'archived' | 'nothing_to_archive' | 'no_retention' | 'locked';
  archive: ArchiveView | null;
}

export interface RetentionReport {
  object: 'retention_run';
  projects: ProjectRetention[];
  /** Week partitions dropped once every project's retention had passed them and they were empty. */
  partitions_dropped: string[];
}

export interface ArchiveView {
  id: string;
  object: 'archive';
  project_id: string;
  status: string;
  window: { since: string; until: string };
  log_range: { first_index: number; last_index: number; checkpoint_size: number };
  /** Where the archive is: a file path, or an s3:// URL. */
  path: string;
  sha256: string | null;
  bytes: number | null;
  deleted: Record<string, number>;
}

export function archiveView(a: ArchiveRow): ArchiveView {
  return {
    id: a.id,
    object: 'archive',
    project_id: a.project_id,
    status: a.status,
    window: { since: new Date(a.window_since).toISOString(), until: new Date(a.window_until).toISOString() },
    log_range: { first_index: Number(a.first_index), last_index: Number(a.last_index), checkpoint_size: Number(a.checkpoint_size) },
    path: a.path,
    sha256: a.sha256,
    bytes: a.bytes === null ? null : Number(a.bytes),
    deleted: a.deleted,
  };
}

/**
 * An archive's leaf range ends on a multiple of 16 leaves: the tree's nodes of levels 1–3 are not
 * stored but hashed from their leaves when a proof needs them (src/integrity/log.ts, `treeNodes`),
 * so every such node must lie wholly inside the archived prefix (never needed again: every
 * retained leaf's proof and every later checkpoint uses the stored nodes of level 4 and up there)
 * or wholly after it (its leaves retained).
 */
export const ARCHIVE_ALIGNMENT = 16;

/** The parts an archive holds: the log range and the rows of the window that retention deletes. */
const ARCHIVE_PARTS: ExportPart[] = ['events', 'permits', 'executions', 'usage'];

const DEFAULT_BATCH = 1000;

/** The archive store key of an archive: `<project>/<archive id>.tar`. */
export const archiveKey = (a: Pick<ArchiveRow, 'project_id' | 'id'>) => `${a.project_id}/${a.id}.tar`;

/** The time of the project's oldest row that retention archives (before `cutoff`), or null. */
async function oldestRow(db: Queryable, projectId: string, cutoff: Date): Promise<Date | null> {
  const { rows } = await db.query<{ at: Date | null }>(
    `SELECT least((SELECT min(timestamp) FROM events WHERE project_id = $1 AND timestamp < $2),
                  (SELECT min(created_at) FROM executions WHERE project_id = $1 AND created_at < $2),
                  (SELECT min(issued_at) FROM permits WHERE project_id = $1 AND issued_at < $2)) AS at`,
    [projectId, cutoff],
  );
  return rows[0].at ? new Date(rows[0].at) : null;
}

export async function runRetention(deps: RetentionDeps, opts: RetentionOptions): Promise<RetentionReport> {
  const projects = await projectsInScope(deps.db, deps.config.retention.days, opts);
  const out: ProjectRetention[] = [];
  for (const p of projects) out.push(await retainProject(deps, p, opts));
  const dropped = await dropAgedPartitions(deps.db, deps.config.retention.days, opts.now);
  return { object: 'retention_run', projects: out, partitions_dropped: dropped };
}

async function projectsInScope(db: Queryable, globalDays: number | undefined, opts: RetentionOptions): Promise<{ id: string; days: number | null }[]> {
  const { rows } = await db.query<{ id: string; retention_days: number | null }>(
    `SELECT id, retention_days FROM projects
      WHERE ($1::text IS NULL OR id = $1)
        AND ($1::text IS NOT NULL OR $2::boolean OR retention_days IS NOT NULL OR $3::int IS NOT NULL
             OR EXISTS (SELECT 1 FROM archives a WHERE a.project_id = projects.id AND a.status <> 'completed'))
      ORDER BY id`,
    [opts.projectId ?? null, opts.before !== undefined, globalDays ?? null],
  );
  return rows.map((r) => ({ id: r.id, days: r.retention_days ?? globalDays ?? null }));
}

/** Session advisory lock class of a project's retention run (one runner per project across processes). */
const RETENTION_LOCK = 7403;

async function retainProject(deps: RetentionDeps, p: { id: string; days: number | null }, opts: RetentionOptions): Promise<ProjectRetention> {
  const client = await deps.db.connect();
  try {
    const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS ok', [RETENTION_LOCK, p.id]);
    if (!rows[0].ok) return { project_id: p.id, cutoff: null, outcome: 'locked', archive: null };
    try {
      return await retainLocked(deps, p, opts);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [RETENTION_LOCK, p.id]);
    }
  } finally {
    client.release();
  }
}

async function retainLocked(deps: RetentionDeps, p: { id: string; days: number | null }, opts: RetentionOptions): Promise<ProjectRetention> {
  // An unfinished archive is finished first, whatever this run's cutoff: its rows may be half deleted.
  const open = await openArchive(deps.db, p.id);
  if (open) {
    const done = await finishArchive(deps, open, opts);
    return { project_id: p.id, cutoff: new Date(open.window_until).toISOString(), outcome: 'archived', archive: archiveView(done) };
  }
  const cutoff = opts.before ?? (p.days === null ? null : new Date(opts.now.getTime() - p.days * 86_400_000));
  if (!cutoff) return { project_id: p.id, cutoff: null, outcome: 'no_retention', archive: null };
  const planned = await planArchive(deps, p.id, cutoff);
  if (!planned) return { project_id: p.id, cutoff: cutoff.toISOString(), outcome: 'nothing_to_archive', archive: null };
  const done = await finishArchive(deps, planned, opts);
  return { project_id: p.id, cutoff: cutoff.toISOString(), outcome: 'archived', archive: archiveView(done) };
}

/**
 * Fixes the next archive's range: from the end of the last one to the last position before the
 * first leaf (event or call record) at or after the cutoff, within the latest checkpoint (issued
 * now if the chain grew), rounded down to ARCHIVE_ALIGNMENT. Records the chain's head hash and
 * the tree's compact range there, computed from the chain before anything is deleted.
 */
async function planArchive(deps: RetentionDeps, projectId: string, cutoff: Date): Promise<ArchiveRow | null> {
  const { db } = deps;
  const base = await lastCompletedArchive(db, projectId);
  // A project's first window starts at its oldest row, not at the epoch: an id made before it (a
  // mistyped or invented one) is not reported as archived.
  const since = base ? new Date(base.window_until) : await oldestRow(db, projectId, cutoff);
  if (!since || since.getTime() >= cutoff.getTime()) return null;
  const from = base ? Number(base.last_index) + 1 : 0; // positions 1..from are archived already
  await chainAllProjectEvents(db, projectId);
  // A leaf whose time cannot be read (no row answers for it) counts as recent: nothing is deleted past it.
  const { rows } = await db.query<{ pos: string | null }>(
    // The first such leaf in chain order (walked by the chain's index from the last archive), not
    // a min() over every later leaf joined to its row.
    `SELECT c.chain_pos AS pos
       FROM event_chain c
       LEFT JOIN events e ON e.seq = c.seq
       LEFT JOIN executions x ON x.project_id = c.project_id AND x.seq = c.seq
      WHERE c.project_id = $1 AND c.chain_pos > $2
        AND coalesce(e.timestamp, x.completed_at, 'infinity'::timestamptz) >= $3
      ORDER BY c.chain_pos
      LIMIT 1`,
    [projectId, from, cutoff],
  );
  let end = rows.length === 0 || rows[0].pos === null ? await chainHead(db, projectId) : Number(rows[0].pos) - 1;
  const signer = await complianceSigner(db, deps.config);
  for (let i = 0; i < 20; i++) {
    const cp = await latestCheckpoint(db, projectId);
    if (cp && Number(cp.tree_size) >= end) break;
    const r = await issueCheckpoint(db, signer, projectId);
    if (!r.issued && r.reason === 'up_to_date') break;
    if (!r.issued) await new Promise((res) => setTimeout(res, 200));
  }
  const cp = await latestCheckpoint(db, projectId);
  if (!cp) return null;
  end = Math.min(end, Number(cp.tree_size));
  end -= end % ARCHIVE_ALIGNMENT;
  if (end <= from) return null;

  let range: Buffer[] = base ? base.compact_range.map((h) => Buffer.from(h, 'base64')) : [];
  let n = from;
  for await (const { leaves } of chainedLeaves(db, projectId, from, end)) {
    const next = appendLeaves(n, range, leaves);
    range = next.range;
    n = next.size;
  }
  const { rows: last } = await db.query<{ seq: string; hash: string }>('SELECT seq, hash FROM event_chain WHERE project_id = $1 AND chain_pos = $2', [projectId, end]);
  const head = last[0] ?? null;
  if (!head) throw new Error(`project ${projectId}: chain position ${end} is missing`);
  const id = newId('arch');
  return insertArchive(db, {
    id,
    project_id: projectId,
    window_since: since,
    window_until: cutoff,
    first_index: from,
    last_index: end - 1,
    last_seq: head.seq,
    head_hash: head.hash,
    compact_range: range.map((h) => h.toString('base64')),
    checkpoint_size: Number(cp.tree_size),
    path: archiveStoreOf(deps.config).locate(archiveKey({ project_id: projectId, id })),
  });
}

async function finishArchive(deps: RetentionDeps, a: ArchiveRow, opts: RetentionOptions): Promise<ArchiveRow> {
  if (a.status === 'building') {
    const { sha256, bytes } = await writeArchive(deps, a, opts);
    await opts.onStep?.('archived', a.id);
    await verifyStoredArchive(deps, a, sha256, bytes);
    await markArchiveVerified(deps.db, a.id, sha256, bytes);
    await opts.onStep?.('verified', a.id);
  } else {
    // Resuming the deletion: the verified object must still be there, whole.
    const stored = await archiveStoreOf(deps.config).head(archiveKey(a));
    if (!stored || stored.bytes !== Number(a.bytes)) throw new ArchiveVerificationError(`archive ${a.id} (${a.path}) is ${stored ? `${stored.bytes} bytes, not ${a.bytes}` : 'missing'}: its rows are not deleted`);
  }
  await deleteArchived(deps.db, a, opts);
  const done = await markArchiveCompleted(deps.db, a.id);
  return done!;
}

/**
 * Builds the archive with the compliance export's code (an export row of the archive's id, its
 * range fixed to the archive's, its files in the store under exports/<id>/), streams the bundle
 * into the store under the archive's key, then drops the export's files and rows: the archive is
 * one object in the store, never whole in memory or in PostgreSQL.
 */
async function writeArchive(deps: RetentionDeps, a: ArchiveRow, opts: RetentionOptions): Promise<{ sha256: string; bytes: number }> {
  const { db } = deps;
  const build = { db, config: deps.config };
  await dropExport(build, a.id);
  await insertExport(db, { id: a.id, projectId: a.project_id, since: new Date(a.window_since), until: new Date(a.window_until), include: ARCHIVE_PARTS, requestedBy: 'retention' });
  await updateExport(db, a.id, { status: 'running', started: true, first_index: Number(a.first_index), last_index: Number(a.last_index), checkpoint_size: Number(a.checkpoint_size) });
  if (!(await findExport(db, null, a.id))) throw new Error(`archive ${a.id}: its export row disappeared`);
  for (const part of ARCHIVE_PARTS) await buildExportPart(build, a.id, part);
  await finalizeExport(build, a.id);
  const hash = createHash('sha256');
  let bytes = 0;
  const bundle = await exportBundle(build, a.id);
  async function* pieces(): AsyncGenerator<Buffer> {
    for await (const piece of bundle.pieces) {
      hash.update(piece);
      bytes += piece.length;
      yield piece;
      await opts.onStep?.('uploading', a.id);
    }
  }
  const stored = await archiveStoreOf(deps.config).put(archiveKey(a), pieces());
  if (stored.bytes !== bytes) throw new ArchiveVerificationError(`archive ${a.id}: ${stored.bytes} bytes stored of ${bytes}`);
  await dropExport(build, a.id);
  return { sha256: hash.digest('hex'), bytes };
}

async function dropExport(deps: RetentionDeps, exportId: string): Promise<void> {
  await deleteExportFiles(deps, exportId);
  await deps.db.query('DELETE FROM compliance_exports WHERE id = $1', [exportId]);
}

export class ArchiveVerificationError extends Error {}

/**
 * Reads the archive back from the store (what is stored, not what was sent) and verifies it as
 * `verify-export` does, that it is this archive's range, and that it is the object written.
 */
async function verifyStoredArchive(deps: RetentionDeps, a: ArchiveRow, sha256: string, bytes: number): Promise<void> {
  const signer = await complianceSigner(deps.db, deps.config);
  const hash = createHash('sha256');
  const chunks: Buffer[] = [];
  // The verifier reads whole files: the archive is held here while it is checked (one retention window's rows).
  for await (const chunk of await archiveStoreOf(deps.config).get(archiveKey(a))) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    hash.update(b);
    chunks.push(b);
  }
  const tar = Buffer.concat(chunks);
  chunks.length = 0;
  if (tar.length !== bytes || hash.digest('hex') !== sha256) throw new ArchiveVerificationError(`archive ${a.id} (${a.path}): the stored object is not the one written`);
  let files: Map<string, Buffer>;
  try {
    files = readTar(tar);
  } catch (err) {
    throw new ArchiveVerificationError(`archive ${a.id} (${a.path}) is not a readable tar: ${(err as Error).message}`);
  }
  const result = verifyExport(files, verifierKey(signer.keyName, signer.publicKey32));
  const expected = Number(a.last_index) - Number(a.first_index) + 1;
  if (!result.ok || result.project_id !== a.project_id || result.events_verified !== expected || result.checkpoint?.tree_size !== Number(a.checkpoint_size)) {
    const why = result.failures[0]?.message ?? `${result.events_verified} of ${expected} records verified`;
    throw new ArchiveVerificationError(`archive ${a.id} (${a.path}) did not verify: ${why}`);
  }
}

/**
 * Deletes the archived rows, a short transaction per batch: the leaves of the archived range (the
 * event or call record and its chain row together, in chain order, so the retained log never has a
 * chain row without its record), then the rows older than the cutoff that are no leaf (call
 * records without a place in the log, permits no retained record or event names, their usage
 * reports, evidence and attestations, idempotency keys). Checkpoints and the tree's stored nodes
 * above the leaves stay: every archive keeps verifying against them.
 */
async function deleteArchived(db: Db, a: ArchiveRow, opts: RetentionOptions): Promise<void> {
  const batch = opts.batchSize ?? DEFAULT_BATCH;
  const project = a.project_id;
  const end = Number(a.last_index) + 1;
  const cutoff = new Date(a.window_until);
  const step = async () => opts.onStep?.('batch', a.id);

  for (;;) {
    const n = await withTransaction(db, async (c) => {
      const { rows } = await c.query<{ seq: string }>('SELECT seq FROM event_chain WHERE project_id = $1 AND chain_pos <= $2 ORDER BY chain_pos LIMIT $3', [project, end, batch]);
      if (rows.length === 0) return 0;
      const seqs = rows.map((r) => r.seq);
      const ev = await c.query('DELETE FROM events WHERE project_id = $1 AND seq = ANY($2::bigint[])', [project, seqs]);
      const ex = await c.query('DELETE FROM executions WHERE project_id = $1 AND seq = ANY($2::bigint[])', [project, seqs]);
      const ch = await c.query('DELETE FROM event_chain WHERE project_id = $1 AND seq = ANY($2::bigint[])', [project, seqs]);
      await addArchiveDeleted(c, a.id, 'events', ev.rowCount ?? 0);
      await addArchiveDeleted(c, a.id, 'executions', ex.rowCount ?? 0);
      await addArchiveDeleted(c, a.id, 'event_chain', ch.rowCount ?? 0);
      return rows.length;
    });
    if (n === 0) break;
    await step();
  }
  // Leaves written out into merkle_nodes (rows chained before leaf hashes were stored) go with their rows.
  await drain(db, a.id, 'merkle_nodes', step, () =>
    db.query(
      `DELETE FROM merkle_nodes WHERE ctid = ANY(ARRAY(SELECT ctid FROM merkle_nodes WHERE project_id = $1 AND level = 0 AND idx < $2 LIMIT $3))`,
      [project, end, batch],
    ),
  );
  await drain(db, a.id, 'executions', step, () =>
    db.query(
      `DELETE FROM executions WHERE id = ANY(ARRAY(SELECT id FROM executions WHERE project_id = $1 AND seq IS NULL AND created_at < $2 LIMIT $3))`,
      [project, cutoff, batch],
    ),
  );
  // The Overview reads the time before the cutoff from the records that remain, not the rollup.
  await moveRollupStart(db, project, cutoff);
  await drain(db, a.id, 'call_rollup', step, () => deleteRollupBefore(db, project, cutoff, batch));
  // A permit stays while a retained record or event names it (a record's leaf holds its permit's
  // decision fields) or a retained permit descends from it.
  await drain(db, a.id, 'permits', step, () =>
    withTransaction(db, async (c) => {
      const { rows } = await c.query<{ id: string }>(
        `SELECT p.id FROM permits p
          WHERE p.project_id = $1 AND p.issued_at < $2
            AND NOT EXISTS (SELECT 1 FROM executions x WHERE x.project_id = p.project_id AND x.permit_id = p.id)
            AND NOT EXISTS (SELECT 1 FROM events e WHERE e.project_id = p.project_id AND e.permit_id = p.id)
            AND NOT EXISTS (SELECT 1 FROM permits k WHERE k.parent_permit_id = p.id AND k.issued_at >= $2)
          ORDER BY p.issued_at LIMIT $3`,
        [project, cutoff, batch],
      );
      if (rows.length === 0) return { rowCount: 0 };
      const ids = rows.map((r) => r.id);
      await c.query('DELETE FROM permit_usage_reports WHERE permit_id = ANY($1::text[])', [ids]);
      await c.query('DELETE FROM permit_evidence WHERE permit_id = ANY($1::text[])', [ids]);
      await c.query('DELETE FROM permit_attestations WHERE permit_id = ANY($1::text[]) OR child_permit_id = ANY($1::text[])', [ids]);
      // A child whose parent is in this batch goes first; a parent a later child still names waits for a later batch.
      return c.query(
        `DELETE FROM permits p WHERE p.id = ANY($1::text[])
           AND NOT EXISTS (SELECT 1 FROM permits k WHERE k.parent_permit_id = p.id AND NOT (k.id = ANY($1::text[])))`,
        [ids],
      );
    }),
  );
  await drain(db, a.id, 'idempotency_keys', step, () =>
    db.query(
      `DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(SELECT ctid FROM idempotency_keys WHERE project_id = $1 AND created_at < $2 LIMIT $3))`,
      [project, cutoff, batch],
    ),
  );
}

async function drain(db: Db, archiveId: string, table: string, step: () => Promise<void>, once_: () => Promise<{ rowCount: number | null }>): Promise<void> {
  for (;;) {
    const r = await once_();
    const n = r.rowCount ?? 0;
    await addArchiveDeleted(db, archiveId, table, n);
    if (n === 0) return;
    await step();
  }
}
