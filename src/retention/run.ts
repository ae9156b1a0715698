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
 * unfinished archive, and a run always finishes it before planning a new one. The steps: planning
 * (src/retention/plan.ts), the archive's object (src/retention/archive.ts), deleting its rows
 * (src/retention/delete.ts).
 */
import type { Queryable } from '../db/pool';
import { markArchiveCompleted, markArchiveVerified, openArchive, type ArchiveRow } from '../db/repositories/archives';
import { checkArchiveStored, verifyStoredArchive, writeArchive } from './archive';
import { deleteArchived, type Deferral } from './delete';
import { deferredWeeks, dropAgedPartitions } from './partitions';
import { Pace } from './pace';
import { planArchive } from './plan';
import { retainProjectsInThread } from './run-thread';
import type { ArchiveView, ProjectRetention, RetentionDeps, RetentionOptions, RetentionReport } from './types';

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

export async function runRetention(deps: RetentionDeps, opts: RetentionOptions): Promise<RetentionReport> {
  // The archives' CPU (rows written out, hashed, read back) in a thread of lower priority; the
  // drop below holds the parent tables' locks, so it runs here at the caller's priority.
  const nice = deps.config.retention.nice ?? 0;
  const { projects: out, scopeMs } = nice > 0 ? await retainProjectsInThread(deps.config, { opts, nice }) : await retainProjects(deps, opts);
  const t = performance.now();
  const weeks = await dropAgedPartitions(deps.db, deps.config.retention.days, opts.now);
  const sum = (k: keyof ProjectRetention['phases_ms']) => Math.round(out.reduce((n, p) => n + (p.phases_ms[k] ?? 0), 0));
  return {
    object: 'retention_run',
    projects: out,
    partitions_dropped: weeks.dropped,
    partitions_kept: weeks.kept,
    phases_ms: {
      scope: Math.round(scopeMs),
      plan: sum('plan'),
      write: sum('write'),
      verify: sum('verify'),
      delete: sum('delete'),
      drop: Math.round(performance.now() - t),
      drop_locked: Math.round(weeks.lockedMs),
      drop_tries: weeks.tries,
    },
  };
}

/** Each project's step of a run: its archive written, verified and its rows deleted (the partitions' drop aside). */
export async function retainProjects(deps: RetentionDeps, opts: RetentionOptions): Promise<{ projects: ProjectRetention[]; scopeMs: number }> {
  const t = performance.now();
  const projects = await projectsInScope(deps.db, deps.config.retention.days, opts);
  const deferral = await deferredWeeks(deps.db, deps.config.retention.days, opts.now, opts.projectId);
  const scopeMs = performance.now() - t;
  const out: ProjectRetention[] = [];
  for (const p of projects) out.push(await retainProject(deps, p, opts, deferral));
  return { projects: out, scopeMs };
}

/** Runs `step`, adding its milliseconds to `phases[name]`. */
async function timed<T>(phases: ProjectRetention['phases_ms'], name: keyof ProjectRetention['phases_ms'], step: () => Promise<T>): Promise<T> {
  const t = performance.now();
  try {
    return await step();
  } finally {
    phases[name] = Math.round((phases[name] ?? 0) + performance.now() - t);
  }
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

async function retainProject(deps: RetentionDeps, p: { id: string; days: number | null }, opts: RetentionOptions, deferral: Deferral | null): Promise<ProjectRetention> {
  const client = await deps.db.connect();
  try {
    const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS ok', [RETENTION_LOCK, p.id]);
    if (!rows[0].ok) return { project_id: p.id, cutoff: null, outcome: 'locked', archive: null, phases_ms: {} };
    try {
      return await retainLocked(deps, p, opts, deferral);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [RETENTION_LOCK, p.id]);
    }
  } finally {
    client.release();
  }
}

async function retainLocked(deps: RetentionDeps, p: { id: string; days: number | null }, opts: RetentionOptions, deferral: Deferral | null): Promise<ProjectRetention> {
  const phases: ProjectRetention['phases_ms'] = {};
  // An unfinished archive is finished first, whatever this run's cutoff: its rows may be half deleted.
  const open = await openArchive(deps.db, p.id);
  if (open) {
    const done = await finishArchive(deps, open, { opts, deferral, phases });
    return { project_id: p.id, cutoff: new Date(open.window_until).toISOString(), outcome: 'archived', archive: archiveView(done), phases_ms: phases };
  }
  const cutoff = opts.before ?? (p.days === null ? null : new Date(opts.now.getTime() - p.days * 86_400_000));
  if (!cutoff) return { project_id: p.id, cutoff: null, outcome: 'no_retention', archive: null, phases_ms: phases };
  const planned = await timed(phases, 'plan', () => planArchive(deps, p.id, cutoff));
  if (!planned) return { project_id: p.id, cutoff: cutoff.toISOString(), outcome: 'nothing_to_archive', archive: null, phases_ms: phases };
  const done = await finishArchive(deps, planned, { opts, deferral, phases });
  return { project_id: p.id, cutoff: cutoff.toISOString(), outcome: 'archived', archive: archiveView(done), phases_ms: phases };
}

async function finishArchive(
  deps: RetentionDeps,
  a: ArchiveRow,
  o: { opts: RetentionOptions; deferral: Deferral | null; phases: ProjectRetention['phases_ms'] },
): Promise<ArchiveRow> {
  const { opts, phases } = o;
  const pace = new Pace(deps.config.retention.cpuShare ?? 1);
  if (a.status === 'building') {
    const { bytes } = await timed(phases, 'write', () => writeArchive(deps, a, opts, pace));
    await opts.onStep?.('archived', a.id);
    await timed(phases, 'verify', async () => {
      const sha256 = await verifyStoredArchive(deps, a, bytes, pace);
      await markArchiveVerified(deps.db, a.id, sha256, bytes);
    });
    await opts.onStep?.('verified', a.id);
  } else {
    await timed(phases, 'verify', () => checkArchiveStored(deps, a));
  }
  await timed(phases, 'delete', () => deleteArchived(deps.db, a, opts, { deferral: o.deferral, pace }));
  const done = await markArchiveCompleted(deps.db, a.id);
  return done!;
}
