/**
 * An archive's object in the archive store (ARCHIVE_DIR or an S3 bucket,
 * docs/decisions/archive-store.md): written in the compliance export format, read back and
 * verified by the offline verifier before any of its rows is deleted.
 */
import { createHash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { buildExportPart, deleteExportFiles, exportBundle, writeManifest } from '../compliance/build';
import { BundleVerifier, type VerifyResult } from '../compliance/verify-export';
import { archiveStoreOf } from '../archive-store/from-config';
import { buildRowPartsInWorker } from './archive-rows';
import { findExport, insertExport, updateExport, type ExportPart } from '../db/repositories/compliance-exports';
import type { ArchiveRow } from '../db/repositories/archives';
import { complianceSigner } from '../integrity/keys';
import { verifierKey } from '../integrity/note';
import type { Pace } from './pace';
import type { RetentionDeps, RetentionOptions } from './types';

/** The parts an archive holds: the log range and the rows of the window that retention deletes. */
const ARCHIVE_PARTS: ExportPart[] = ['events', 'permits', 'executions', 'usage'];

/**
 * An archive's row parts are written in a worker thread from this many leaves (below, its start
 * costs more than it saves), on a machine of at least ROWS_IN_WORKER_CORES cores: on two, shared
 * with PostgreSQL, it showed no steady gain (docs/decisions/archive-row-parts-worker.md).
 */
const ROWS_IN_WORKER_FROM = 5000;
const ROWS_IN_WORKER_CORES = 4;

/** The archive store key of an archive: `<project>/<archive id>.tar`. */
export const archiveKey = (a: Pick<ArchiveRow, 'project_id' | 'id'>) => `${a.project_id}/${a.id}.tar`;

/**
 * Builds the archive with the compliance export's code (an export row of the archive's id, its
 * range fixed to the archive's, its files in the store under exports/<id>/), streams the bundle
 * into the store under the archive's key, then drops the export's files and rows: the archive is
 * one object in the store, never whole in memory or in PostgreSQL. Returns its length; its hash is
 * taken as it is read back (`verifyStoredArchive`), of what was stored rather than of what was sent.
 */
export async function writeArchive(deps: RetentionDeps, a: ArchiveRow, opts: RetentionOptions, pace?: Pace): Promise<{ bytes: number }> {
  const { db } = deps;
  // The part files are read back into the archive's object and deleted: scratch objects.
  const build = { db, config: deps.config, scratch: true, pause: pace && (() => pace.step()) };
  await dropExport(build, a.id);
  await insertExport(db, { id: a.id, projectId: a.project_id, since: new Date(a.window_since), until: new Date(a.window_until), include: ARCHIVE_PARTS, requestedBy: 'retention' });
  await updateExport(db, a.id, { status: 'running', started: true, first_index: Number(a.first_index), last_index: Number(a.last_index), checkpoint_size: Number(a.checkpoint_size) });
  if (!(await findExport(db, null, a.id))) throw new Error(`archive ${a.id}: its export row disappeared`);
  // The events part beside the rows' parts, one of those at a time; a large archive's row parts
  // in a worker thread (archive-rows.ts), on another core.
  const rowParts = ARCHIVE_PARTS.filter((p) => p !== 'events');
  const leaves = Number(a.last_index) - Number(a.first_index) + 1;
  const inWorker = opts.rowsInWorker ?? (leaves >= ROWS_IN_WORKER_FROM && availableParallelism() >= ROWS_IN_WORKER_CORES);
  const built = await Promise.allSettled([
    buildExportPart(build, a.id, 'events'),
    inWorker
      ? buildRowPartsInWorker(deps.config, a.id, rowParts, pace?.share)
      : (async () => {
          for (const part of rowParts) await buildExportPart(build, a.id, part);
        })(),
  ]);
  for (const b of built) if (b.status === 'rejected') throw b.reason;
  // The manifest, not an export's finalize: the bundle is hashed as it is read back and verified.
  await writeManifest(build, a.id);
  const bundle = await exportBundle(build, a.id);
  async function* pieces(): AsyncGenerator<Buffer> {
    for await (const piece of bundle.pieces) {
      yield piece;
      await opts.onStep?.('uploading', a.id);
      await pace?.step();
    }
  }
  const stored = await archiveStoreOf(deps.config).put(archiveKey(a), pieces());
  if (stored.bytes !== bundle.bytes) throw new ArchiveVerificationError(`archive ${a.id}: ${stored.bytes} bytes stored of ${bundle.bytes}`);
  await dropExport(build, a.id);
  return { bytes: bundle.bytes };
}

async function dropExport(deps: RetentionDeps, exportId: string): Promise<void> {
  await deleteExportFiles(deps, exportId);
  await deps.db.query('DELETE FROM compliance_exports WHERE id = $1', [exportId]);
}

export class ArchiveVerificationError extends Error {}

/**
 * Reads the archive back from the store (what is stored, not what was sent) and verifies it as
 * `verify-export` does, as it streams (src/compliance/verify-stream.ts: nothing of it held whole):
 * its signed manifest, every file against the manifest's hashes, every leaf's proof against the
 * checkpoint, that it is this archive's range, and that it is as long as the object written.
 * Returns the stored object's sha256, which the archive row records.
 */
export async function verifyStoredArchive(deps: RetentionDeps, a: ArchiveRow, bytes: number, pace?: Pace): Promise<string> {
  const signer = await complianceSigner(deps.db, deps.config);
  const hash = createHash('sha256');
  const bundle = new BundleVerifier(verifierKey(signer.keyName, signer.publicKey32));
  let read = 0;
  // A tar that breaks is reported once the whole object is read: an object of another length says so first.
  let unreadable: Error | null = null;
  for await (const chunk of await archiveStoreOf(deps.config).get(archiveKey(a))) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    hash.update(b);
    read += b.length;
    await pace?.step();
    if (unreadable) continue;
    try {
      bundle.write(b);
    } catch (err) {
      unreadable = err as Error;
    }
  }
  if (read !== bytes) throw new ArchiveVerificationError(`archive ${a.id} (${a.path}): the stored object is ${read} bytes, not the ${bytes} written`);
  let result: VerifyResult;
  try {
    if (unreadable) throw unreadable;
    result = bundle.finish();
  } catch (err) {
    throw new ArchiveVerificationError(`archive ${a.id} (${a.path}) is not a readable tar: ${(err as Error).message}`);
  }
  const expected = Number(a.last_index) - Number(a.first_index) + 1;
  if (!result.ok || result.project_id !== a.project_id || result.events_verified !== expected || result.checkpoint?.tree_size !== Number(a.checkpoint_size)) {
    const why = result.failures[0]?.message ?? `${result.events_verified} of ${expected} records verified`;
    throw new ArchiveVerificationError(`archive ${a.id} (${a.path}) did not verify: ${why}`);
  }
  return hash.digest('hex');
}

/** Before resuming an archive's deletion: its verified object must still be in the store, whole. */
export async function checkArchiveStored(deps: RetentionDeps, a: ArchiveRow): Promise<void> {
  const stored = await archiveStoreOf(deps.config).head(archiveKey(a));
  if (!stored || stored.bytes !== Number(a.bytes)) throw new ArchiveVerificationError(`archive ${a.id} (${a.path}) is ${stored ? `${stored.bytes} bytes, not ${a.bytes}` : 'missing'}: its rows are not deleted`);
}
