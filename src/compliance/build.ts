/**
 * Building a compliance export bundle (run by the complianceExportWorkflow's activities).
 *
 * Files: events.ndjson (one line per logged event of the window's position range: the event's
 * canonical bytes, exactly the Merkle leaf; for a call record, its leaf event `call.recorded`,
 * src/executions/record-leaf.ts, so offline verifiers check it as any event), proofs.ndjson (one line per log index: seq, leaf hash,
 * inclusion proof against the checkpoint), checkpoint.note (the signed checkpoint covering the
 * range), permits/executions/usage/workflow_intents.ndjson (RFC 8785 JSON rows whose time falls in
 * the window), and manifest.note: a signed note whose text is the manifest (each file's sha256,
 * byte count and record count, the window, the range, the checkpoint). Leaf hashes and proofs come
 * from the stored tree, the events from the events table (records from the calls and permits
 * tables) as it is now: an event or record altered or deleted after it was logged shows in the
 * bundle as a leaf that does not match.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { canonicalJson } from '../events/canonical-json';
import { canonicalJsonbLines } from '../events/canonical-jsonb';
import type { Config } from '../config';
import type { Db } from '../db/pool';
import { canonicalOfStored } from '../db/repositories/canonical-columns';
import type { CanonicalColumns } from '../events/canonical';
import { chainAllProjectEvents } from '../db/repositories/event-chain';
import { readRecordLeafSourcesOfSeqs, writeRecordLeaf, type RecordLeafSource } from '../db/repositories/record-leaf-text';
import { LineBytes, NdjsonChunk } from '../events/ndjson-chunk';
import {
  exportRowPages,
  findExport,
  listExportFiles,
  mergeExportProgress,
  markExportPartDone,
  putExportFile,
  readExportChunk,
  updateExport,
  windowPositions,
  type ExportFileRow,
  type ExportPart,
  type ExportRow,
} from '../db/repositories/compliance-exports';
import { checkpointAtSize, checkpointCovering, latestCheckpoint, readChainRangeColumns, type ChainedColumnsRow } from '../db/repositories/integrity-log';
import { complianceSigner } from '../integrity/keys';
import { issueCheckpoint, logOrigin, treeNodes } from '../integrity/log';
import { nodesNeeded, proofTexts, sourceOf, type NodeSource, type SubtreeMemo } from '../integrity/merkle';
import { signNote } from '../integrity/note';
import { archiveStoreOf } from '../archive-store/from-config';
import type { ArchiveStore } from '../archive-store/store';
import { tarBytes, tarHeader, tarPadding, TAR_END } from './tar';
import { MANIFEST_FORMAT, type ExportManifest } from './verify-export';

export interface BuildDeps {
  db: Db;
  config: Pick<Config, 'env' | 'masterKey' | 'databaseUrl' | 'archiveStore'>;
  /** The files are read back into one object and deleted (an archive's): stored as scratch objects, not flushed to disk. */
  scratch?: boolean;
  /** Called between pieces of work (retention's pace, src/retention/pace.ts). */
  pause?: () => Promise<void>;
}

/** The archive store key of an export's file. */
export const exportFileKey = (exportId: string, name: string) => `exports/${exportId}/${name}`;

/** Leaves per read of the events part (the next read runs while one is written out). */
const BATCH = 2000;
/** Events written out (whole-row canonical form, inclusion proof) between two turns of the event loop: ~1 ms. */
const EVENTS_PER_TURN = 50;

async function load(db: Db, exportId: string): Promise<ExportRow> {
  const row = await findExport(db, null, exportId);
  if (!row) throw new Error(`compliance export ${exportId} not found`);
  return row;
}

/** Marks the export running, chains pending events, fixes the position range and the checkpoint. */
export async function prepareExport(deps: BuildDeps, exportId: string, waitMs = 60_000): Promise<{ parts: ExportPart[] }> {
  const row = await load(deps.db, exportId);
  if (row.status === 'completed') return { parts: [] };
  await updateExport(deps.db, exportId, { status: 'running', started: true, progress: { phase: 'preparing', parts_total: row.include.length, parts_done: [] } });
  await chainAllProjectEvents(deps.db, row.project_id);
  const range = row.include.includes('events') ? await windowPositions(deps.db, row.project_id, row.window_start, row.window_end) : { first: null, last: null, count: 0 };
  // The checkpoint travels with the events part only (an export without events has none).
  let checkpoint = !row.include.includes('events')
    ? null
    : range.last === null
      ? await latestCheckpoint(deps.db, row.project_id)
      : await checkpointCovering(deps.db, row.project_id, range.last);
  if (!checkpoint && range.last !== null) {
    // No checkpoint covers the window's end yet: issue one now rather than wait for the next round.
    const signer = await complianceSigner(deps.db, deps.config);
    const deadline = Date.now() + waitMs;
    while (!checkpoint) {
      const r = await issueCheckpoint(deps.db, signer, row.project_id);
      checkpoint = r.issued ?? (await checkpointCovering(deps.db, row.project_id, range.last));
      if (!checkpoint) {
        if (Date.now() > deadline) throw new Error('no checkpoint covers the window yet');
        await new Promise((res) => setTimeout(res, 200));
      }
    }
  }
  await updateExport(deps.db, exportId, {
    first_index: range.first === null ? null : range.first - 1,
    last_index: range.last === null ? null : range.last - 1,
    checkpoint_size: checkpoint ? Number(checkpoint.tree_size) : null,
    progress: { phase: 'collecting', parts_total: row.include.length, parts_done: [], events_total: range.last === null ? 0 : range.last - range.first! + 1, events_done: 0 },
  });
  return { parts: row.include };
}

/** Writes one part's files (idempotent: a retried activity overwrites them). */
export async function buildExportPart(deps: BuildDeps, exportId: string, part: ExportPart): Promise<number> {
  const row = await load(deps.db, exportId);
  if (part !== 'events') {
    const docs = new ExportFileWriter(deps, exportId, `${part}.ndjson`);
    await written([docs], async () => {
      for await (const page of exportRowPages(deps.db, part, { projectId: row.project_id, since: row.window_start, until: row.window_end })) {
        if (page.length > 0) await docs.addBytes(canonicalJsonbLines(page), page.length);
        await deps.pause?.();
      }
    });
    await markExportPartDone(deps.db, row.id, part);
    return docs.records;
  }
  const events = new ExportFileWriter(deps, exportId, 'events.ndjson');
  const proofs = new ExportFileWriter(deps, exportId, 'proofs.ndjson');
  await written([events, proofs], () => writeEventsPart(deps, row, events, proofs));
  await markExportPartDone(deps.db, row.id, part);
  return events.records;
}

/** Runs `write`, then closes the files (stored whole); on an error, aborts them (nothing stored) and rethrows. */
async function written(files: ExportFileWriter[], write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
    for (const f of files) await f.close();
  } catch (err) {
    for (const f of files) f.abort(err as Error);
    await Promise.allSettled(files.map((f) => f.stored));
    throw err;
  }
}

/** One read of the events part: its chain rows by position, the records they name, and the tree nodes its leaves and proofs need. */
interface EventsBatch {
  lo: number;
  hi: number;
  chained: Map<number, ChainedColumnsRow>;
  records: Map<string, RecordLeafSource>;
  get: NodeSource;
}

async function readEventsBatch(deps: BuildDeps, row: ExportRow, lo: number, hi: number): Promise<EventsBatch> {
  const size = row.checkpoint_size!;
  // Positions lo+1 .. hi+1, from the chain's side (a deleted event row comes back with seq null).
  const chainRows = await readChainRangeColumns(deps.db, row.project_id, { afterPos: lo, toPos: hi + 1, limit: hi - lo + 1 });
  const chained = new Map(chainRows.map((r) => [Number(r.chain_pos), r]));
  // Positions no event row answers for are call records' (or deleted rows).
  const records = await readRecordLeafSourcesOfSeqs(deps.db, row.project_id, chainRows.filter((r) => r.seq === null).map((r) => r.chain_seq));
  const recorded: SubtreeMemo = new Map();
  // The proofs' nodes as the writer takes them (proofTexts): a sibling its neighbour's proof had is not looked up again.
  const needed = nodesNeeded((get) => {
    const proofOf = proofTexts(size, get, recorded);
    for (let i = lo; i <= hi; i++) {
      get(0, i);
      proofOf(i);
    }
  });
  const leafOfChainRow = (idx: number) => (idx >= lo && idx <= hi ? (chained.get(idx + 1)?.leaf_hash ?? undefined) : undefined);
  return { lo, hi, chained, records, get: sourceOf(await treeNodes(deps.db, row.project_id, needed, leafOfChainRow)) };
}

async function writeEventsPart(deps: BuildDeps, row: ExportRow, events: ExportFileWriter, proofs: ExportFileWriter): Promise<void> {
  const exportId = row.id;
  const size = row.checkpoint_size;
  if (row.first_index !== null && row.last_index !== null && size !== null) {
    const first = Number(row.first_index);
    const last = Number(row.last_index);
    const eventBytes = new LineBytes();
    const proofBytes = new LineBytes();
    const read = (lo: number) => (lo > last ? null : readEventsBatch(deps, row, lo, Math.min(lo + BATCH - 1, last)));
    let next = read(first);
    while (next) {
      const { lo, hi, chained, records, get } = await next;
      // The next read runs while this one is written out.
      next = read(hi + 1);
      next?.catch(() => undefined);
      // A proof repeats most of its neighbour's nodes: each is written out in base64 once.
      const proofOf = proofTexts(size, get, new Map());
      const count = hi - lo + 1;
      const eventLines = new NdjsonChunk(count * eventBytes.perLine);
      const proofLines = new NdjsonChunk(count * proofBytes.perLine);
      for (let i = lo; i <= hi; i++) {
        // The worker shares the API process unless it runs apart: let requests in between slices.
        if (i > lo && (i - lo) % EVENTS_PER_TURN === 0) {
          await nextTurn();
          await deps.pause?.();
        }
        const r = chained.get(i + 1);
        const record = r && r.seq === null ? records.get(String(r.chain_seq)) : undefined;
        if (record) {
          writeRecordLeaf(eventLines, record, r!.prev_hash);
          eventLines.endLine();
        } else if (r && r.seq !== null && r.id !== null) {
          eventLines.text(await canonicalOfStored(deps.db, r as CanonicalColumns, r.prev_hash));
          eventLines.endLine();
        }
        // JSON.stringify({ index, seq, leaf_hash, proof }) written out: numbers and base64 need no escaping.
        const proof = proofOf(i);
        proofLines.ascii(`{"index":${i},"seq":${r ? Number(r.chain_seq) : 'null'},"leaf_hash":"${get(0, i).toString('base64')}","proof":[`);
        for (let k = 0; k < proof.length; k++) {
          proofLines.ascii(k === 0 ? '"' : ',"');
          proofLines.ascii(proof[k]);
          proofLines.ascii('"');
        }
        proofLines.ascii(']}');
        proofLines.endLine();
      }
      eventBytes.saw(eventLines);
      proofBytes.saw(proofLines);
      await events.add(eventLines);
      await proofs.add(proofLines);
      await mergeExportProgress(deps.db, exportId, { events_done: hi - first + 1 });
    }
  }
  if (size !== null) {
    const cp = await checkpointAtSize(deps.db, row.project_id, size);
    if (!cp && row.last_index !== null) throw new Error(`checkpoint of size ${size} disappeared`);
    if (cp) await putWholeFile(deps, exportId, 'checkpoint.note', Buffer.from(cp.note, 'utf8'));
  }
}

/**
 * An export file streamed into the archive store a batch at a time (one object per file, under
 * `exportFileKey`), hashed as it grows; `close` waits for the object and records its hash, size and
 * record count. Neither the file nor the bundle is ever whole in memory: a whole events part held
 * the event loop for ~60 ms per 10,000 events when it was joined at the end
 * (docs/decisions/compliance-exports.md). A step that fails or dies before `close` leaves no
 * object (the store's writes are all or nothing), and its retry writes the file again from its start.
 */
class ExportFileWriter {
  private readonly hash = createHash('sha256');
  private readonly body = new PassThrough();
  readonly stored: Promise<{ bytes: number }>;
  private chunks = 0;
  private bytes = 0;
  records = 0;

  constructor(
    private readonly deps: BuildDeps,
    private readonly exportId: string,
    private readonly name: string,
  ) {
    this.stored = archiveStoreOf(deps.config).put(exportFileKey(exportId, name), this.body, { scratch: deps.scratch });
    // Awaited by close or after abort; a failure meanwhile surfaces from the next write.
    this.stored.catch(() => undefined);
  }

  async add(lines: NdjsonChunk): Promise<void> {
    if (lines.lines === 0) return;
    await this.addBytes(lines.bytes(), lines.lines);
  }

  async addBytes(content: Buffer, records: number): Promise<void> {
    this.hash.update(content);
    this.bytes += content.length;
    this.records += records;
    this.chunks += 1;
    // Waits for the store to take it (a failed store rejects here rather than never draining).
    if (!this.body.write(content)) await Promise.race([once(this.body, 'drain'), this.stored]);
  }

  async close(): Promise<void> {
    this.body.end();
    await this.stored;
    await putExportFile(this.deps.db, {
      exportId: this.exportId,
      name: this.name,
      sha256: this.hash.digest('hex'),
      records: this.records,
      bytes: this.bytes,
      chunks: this.chunks,
      storedIn: 'archive_store',
    });
  }

  abort(err: Error): void {
    this.body.destroy(err);
  }
}

async function putWholeFile(deps: BuildDeps, exportId: string, name: string, content: Buffer): Promise<void> {
  const file = new ExportFileWriter(deps, exportId, name);
  await written([file], () => file.addBytes(content, 1));
}

/** The files in bundle order: manifest.note first, the rest by name. */
function bundleOrder(files: ExportFileRow[]): ExportFileRow[] {
  return [...files].sort((a, b) => (a.name === 'manifest.note' ? -1 : b.name === 'manifest.note' ? 1 : a.name.localeCompare(b.name)));
}

/**
 * The bundle (a tar of the export's files), streamed a piece at a time from where each file is (the
 * archive store, or the database's chunks for a file written before it), with its length known
 * before the first byte.
 */
export async function exportBundle(deps: BuildDeps, exportId: string): Promise<{ bytes: number; pieces: AsyncGenerator<Buffer> }> {
  const files = bundleOrder(await listExportFiles(deps.db, exportId));
  const store = archiveStoreOf(deps.config);
  async function* pieces(): AsyncGenerator<Buffer> {
    for (const f of files) {
      yield tarHeader(f.name, f.bytes);
      if (f.stored_in === 'database') {
        for (let i = 0; i < f.chunks; i++) yield await readExportChunk(deps.db, exportId, f.name, i);
      } else {
        yield* storedFile(store, exportId, f);
      }
      const pad = tarPadding(f.bytes);
      if (pad.length > 0) yield pad;
    }
    yield TAR_END;
  }
  return { bytes: tarBytes(files.map((f) => f.bytes)), pieces: pieces() };
}

/** A file's object, checked to be as long as its row says: a shorter or longer object would break the tar's framing. */
async function* storedFile(store: ArchiveStore, exportId: string, f: ExportFileRow): AsyncGenerator<Buffer> {
  const stream: Readable = await store.get(exportFileKey(exportId, f.name));
  let n = 0;
  try {
    for await (const chunk of stream) {
      const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      n += b.length;
      if (n > f.bytes) throw new Error(`export ${exportId}: the stored ${f.name} is longer than its ${f.bytes} bytes`);
      yield b;
    }
  } finally {
    stream.destroy();
  }
  if (n !== f.bytes) throw new Error(`export ${exportId}: the stored ${f.name} is ${n} bytes, not ${f.bytes}`);
}

/** Deletes the export's objects from the archive store (its rows stay until the caller deletes them). */
export async function deleteExportFiles(deps: BuildDeps, exportId: string): Promise<void> {
  const store = archiveStoreOf(deps.config);
  for (const f of await listExportFiles(deps.db, exportId)) if (f.stored_in === 'archive_store') await store.delete(exportFileKey(exportId, f.name));
}

/** Writes the export's signed manifest (manifest.note), listing every other file it holds. */
export async function writeManifest(deps: BuildDeps, exportId: string): Promise<void> {
  const row = await load(deps.db, exportId);
  const files = (await listExportFiles(deps.db, exportId)).filter((f) => f.name !== 'manifest.note');
  const signer = await complianceSigner(deps.db, deps.config);
  const manifest: ExportManifest = {
    format: MANIFEST_FORMAT,
    export_id: row.id,
    project_id: row.project_id,
    created_at: new Date(row.created_at).toISOString(),
    window: { since: new Date(row.window_start).toISOString(), until: new Date(row.window_end).toISOString() },
    include: row.include,
    log: {
      origin: logOrigin(row.project_id),
      first_index: row.first_index === null ? null : Number(row.first_index),
      last_index: row.last_index === null ? null : Number(row.last_index),
      event_count: files.find((f) => f.name === 'events.ndjson')?.records ?? 0,
      checkpoint_size: row.checkpoint_size === null ? null : Number(row.checkpoint_size),
    },
    files: files.map((f) => ({ name: f.name, sha256: f.sha256, bytes: Number(f.bytes), records: Number(f.records) })),
    key_id: signer.kid,
  };
  const note = Buffer.from(signNote(`${canonicalJson(manifest)}\n`, signer.keyName, signer.privateKey, signer.publicKey32), 'utf8');
  await putWholeFile(deps, exportId, 'manifest.note', note);
}

/** Writes the signed manifest and completes the export with its bundle's hash. */
export async function finalizeExport(deps: BuildDeps, exportId: string): Promise<{ bundle_sha256: string; bundle_bytes: number }> {
  await writeManifest(deps, exportId);
  const bundle = await exportBundle(deps, exportId);
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const piece of bundle.pieces) {
    hash.update(piece);
    bytes += piece.length;
  }
  if (bytes !== bundle.bytes) throw new Error(`export ${exportId}: the bundle is ${bytes} bytes, its files say ${bundle.bytes}`);
  const out = { bundle_sha256: hash.digest('hex'), bundle_bytes: bytes };
  await updateExport(deps.db, exportId, { status: 'completed', completed: true, ...out, mergeProgress: { phase: 'completed' } });
  return out;
}

export async function failExport(deps: BuildDeps, exportId: string, message: string): Promise<void> {
  await updateExport(deps.db, exportId, {
    status: 'failed',
    completed: true,
    error: { code: 'export_failed', message: message.slice(0, 1000) },
    mergeProgress: { phase: 'failed' },
  });
}
