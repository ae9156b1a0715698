/**
 * The export verifier over a stream of files (src/compliance/verify-export.ts says what it checks):
 * each file is hashed as it passes, events.ndjson's lines are kept as their leaf hashes and chain
 * hashes (32 bytes each), and proofs.ndjson's lines are checked against them and the checkpoint's
 * root as they pass. Nothing is held whole: a bundle of millions of events verifies in memory of
 * ~100 bytes per event. Files may come in any order; the bundle's order (manifest.note,
 * checkpoint.note, then by name, so events before proofs) holds none back. A file that comes
 * before what it is checked against (a data file before the manifest, proofs before events) is
 * kept until then.
 */
import { createHash } from 'node:crypto';
import { openNote, parseCheckpointText, parseVerifierKey, type Checkpoint, type NoteVerifier } from '../integrity/note';
import { MANIFEST_FORMAT, type ExportManifest, type VerifyFailure, type VerifyResult } from './export-format';
import type { TarMemberSink } from './tar';
import { EventTable, Lines, ProofCheck } from './verify-events';

const NL = 0x0a;

/** A file as it passes: its sha256, bytes and lines, and what reads its content (events, proofs). */
class FileCheck implements TarMemberSink {
  private readonly hash = createHash('sha256');
  bytes = 0;
  private newlines = 0;
  private lastByte = NL;
  sha256 = '';

  constructor(private readonly content: TarMemberSink | null) {}

  write(piece: Buffer): void {
    this.hash.update(piece);
    this.bytes += piece.length;
    if (piece.length > 0) this.lastByte = piece[piece.length - 1];
    if (this.content) this.content.write(piece);
    else for (let nl = piece.indexOf(NL); nl >= 0; nl = piece.indexOf(NL, nl + 1)) this.newlines += 1;
  }

  end(): void {
    this.sha256 = this.hash.digest('hex');
    this.content?.end();
  }

  /** Its lines, as an NDJSON file counts them. */
  get lines(): number {
    if (this.content instanceof Lines) return this.content.count;
    return this.newlines + (this.lastByte === NL ? 0 : 1);
  }
}

/** A file kept whole until what it is checked against has come. */
class Held implements TarMemberSink {
  readonly pieces: Buffer[] = [];
  ended = false;
  constructor(readonly name: string) {}
  write(piece: Buffer): void {
    this.pieces.push(Buffer.from(piece));
  }
  end(): void {
    this.ended = true;
  }
}

type Stage = 'waiting' | 'checked' | 'failed';

/**
 * Verifies an export's files as they stream: `file(name)` gives the sink of one file's content;
 * `finish()` the result, as `verifyExport` reports it.
 */
export class ExportVerifier {
  private verifier: NoteVerifier | null = null;
  private stage: Stage = 'waiting';
  private early: VerifyFailure | null = null;
  private manifest: ExportManifest | null = null;
  private checkpoint: Checkpoint | null = null;
  private checkpointNeeded = false;
  private readonly files = new Map<string, FileCheck>();
  private readonly whole = new Map<string, Buffer[]>();
  private readonly held: Held[] = [];
  private readonly result: VerifyResult = { object: 'export_verification', ok: false, export_id: null, project_id: null, checkpoint: null, events_verified: 0, files_verified: 0, failures: [] };
  private readonly eventFailures: VerifyFailure[] = [];
  private readonly proofFailures: VerifyFailure[] = [];
  private readonly events = new EventTable((f) => this.eventFailures.push(f));
  private range: { first: number; last: number } | null = null;
  private proofs: ProofCheck | null = null;
  private eventsSeen = false;
  private duplicates: string[] = [];

  constructor(key: string) {
    try {
      this.verifier = parseVerifierKey(key);
    } catch (err) {
      this.early = { check: 'key', message: `the key is not a note verifier key: ${(err as Error).message}` };
      this.stage = 'failed';
    }
  }

  /** The sink of one file's content (its base name). */
  file(name: string): TarMemberSink {
    if (this.files.has(name) || this.held.some((h) => h.name === name)) {
      this.duplicates.push(name);
      return { write: () => undefined, end: () => undefined };
    }
    if (name === 'manifest.note' || name === 'checkpoint.note') return this.note(name);
    // Before the manifest (and the checkpoint) nothing is known to check against; proofs wait for the events.
    if (this.stage === 'waiting' || (name === 'proofs.ndjson' && this.range && !this.eventsSeen)) {
      const h = new Held(name);
      this.held.push(h);
      return h;
    }
    return this.check(name);
  }

  private check(name: string): FileCheck {
    let content: TarMemberSink | null = null;
    if (this.range && this.checkpoint && this.stage === 'checked') {
      if (name === 'events.ndjson') {
        this.eventsSeen = true;
        content = new Lines((line, n) => this.events.add(line, n));
      } else if (name === 'proofs.ndjson') {
        const proofs = (this.proofs = new ProofCheck(this.range, this.checkpoint, this.events, (f) => this.proofFailures.push(f)));
        content = new Lines((line) => proofs.line(line));
      }
    }
    const f = new FileCheck(content);
    this.files.set(name, f);
    return f;
  }

  /** manifest.note and checkpoint.note: small, kept whole, read when they end. */
  private note(name: string): TarMemberSink {
    const check = this.check(name);
    const pieces: Buffer[] = [];
    return {
      write: (p) => {
        check.write(p);
        pieces.push(Buffer.from(p));
      },
      end: () => {
        check.end();
        this.whole.set(name, pieces);
        this.advance();
      },
    };
  }

  private text(name: string): string | null {
    const pieces = this.whole.get(name);
    return pieces ? Buffer.concat(pieces).toString('utf8') : null;
  }

  /** Reads the manifest, then the checkpoint, as soon as each is whole; then the files kept until then. */
  private advance(): void {
    if (this.stage !== 'waiting') return;
    if (!this.manifest) {
      const note = this.text('manifest.note');
      if (note === null) return;
      const opened = openNote(note, this.verifier!);
      if (!opened.ok) return this.stop({ check: 'manifest_signature', file: 'manifest.note', message: `manifest signature: ${opened.error}` });
      try {
        this.manifest = JSON.parse(opened.text) as ExportManifest;
        if (this.manifest.format !== MANIFEST_FORMAT) throw new Error(`format is ${JSON.stringify(this.manifest.format)}, expected ${MANIFEST_FORMAT}`);
      } catch (err) {
        this.manifest = null;
        return this.stop({ check: 'manifest', file: 'manifest.note', message: `manifest: ${(err as Error).message}` });
      }
      this.result.export_id = this.manifest.export_id;
      this.result.project_id = this.manifest.project_id;
      this.checkpointNeeded = this.manifest.log.checkpoint_size !== null;
    }
    const m = this.manifest;
    if (this.checkpointNeeded) {
      const note = this.text('checkpoint.note');
      if (note === null) return;
      const cp = openNote(note, this.verifier!);
      if (!cp.ok) return this.stop({ check: 'checkpoint_signature', file: 'checkpoint.note', message: `checkpoint signature: ${cp.error}` });
      let checkpoint: Checkpoint;
      try {
        checkpoint = parseCheckpointText(cp.text);
      } catch (err) {
        return this.stop({ check: 'checkpoint', file: 'checkpoint.note', message: `checkpoint: ${(err as Error).message}` });
      }
      if (checkpoint.origin !== m.log.origin || checkpoint.size !== m.log.checkpoint_size) {
        return this.stop({ check: 'checkpoint', file: 'checkpoint.note', message: `the checkpoint (${checkpoint.origin}, size ${checkpoint.size}) is not the one the manifest names (${m.log.origin}, size ${m.log.checkpoint_size})` });
      }
      this.checkpoint = checkpoint;
      this.result.checkpoint = { origin: checkpoint.origin, tree_size: checkpoint.size, root_hash: checkpoint.root.toString('base64') };
    }
    const { first_index: first, last_index: last } = m.log;
    if (m.include.includes('events') && first !== null && last !== null) {
      if (!this.checkpoint) this.early = { check: 'checkpoint', message: 'the manifest lists events but no checkpoint' };
      else if (last >= this.checkpoint.size) this.early = { check: 'checkpoint', message: `log index ${last} is not covered by the checkpoint of size ${this.checkpoint.size}` };
      else this.range = { first, last };
    }
    this.stage = 'checked';
    this.replayHeld();
  }

  private stop(f: VerifyFailure): void {
    this.early = f;
    this.stage = 'failed';
  }

  /** The files kept back, events before proofs; a file still streaming in when it is replayed goes on into the same check. */
  private replayHeld(): void {
    const order = (h: Held) => (h.name === 'proofs.ndjson' ? 1 : 0);
    for (const h of [...this.held].sort((a, b) => order(a) - order(b))) {
      if (!h.ended) continue;
      this.held.splice(this.held.indexOf(h), 1);
      const sink = this.check(h.name);
      for (const p of h.pieces) sink.write(p);
      sink.end();
    }
  }

  finish(): VerifyResult {
    const result = this.result;
    if (this.stage === 'waiting' && !this.whole.has('manifest.note')) this.stop({ check: 'file_missing', file: 'manifest.note', message: 'manifest.note is missing' });
    if (this.stage === 'waiting' && this.checkpointNeeded && !this.checkpoint) this.stop({ check: 'file_missing', file: 'checkpoint.note', message: 'checkpoint.note is missing' });
    if (this.stage === 'failed') {
      result.failures.push(this.early!);
      return result;
    }
    this.replayHeld();
    const m = this.manifest!;
    // 3. File hashes (the per-record checks still ran, to locate a change).
    const listed = new Set(m.files.map((f) => f.name));
    for (const f of m.files) {
      const got = this.files.get(f.name);
      if (!got) {
        result.failures.push({ check: 'file_missing', file: f.name, message: `${f.name} is listed in the manifest but missing` });
        continue;
      }
      if (got.sha256 !== f.sha256 || got.bytes !== f.bytes) {
        result.failures.push({ check: 'file_hash', file: f.name, message: `${f.name}: sha256 ${got.sha256} (${got.bytes} bytes) does not match the manifest's ${f.sha256} (${f.bytes} bytes)` });
        continue;
      }
      if (f.name.endsWith('.ndjson') && got.lines !== f.records) {
        result.failures.push({ check: 'manifest', file: f.name, message: `${f.name} has ${got.lines} lines, the manifest says ${f.records} records` });
        continue;
      }
      result.files_verified += 1;
    }
    for (const name of this.files.keys()) {
      if (name !== 'manifest.note' && !listed.has(name)) result.failures.push({ check: 'file_unexpected', file: name, message: `${name} is not listed in the manifest` });
    }
    for (const name of this.duplicates) result.failures.push({ check: 'file_unexpected', file: name, message: `${name} is in the bundle twice` });
    if (this.early) {
      result.failures.push(this.early);
      return result;
    }
    // 4 and 5. Events against the checkpoint.
    if (this.range && this.checkpoint) {
      const proofs = this.proofs ?? new ProofCheck(this.range, this.checkpoint, this.events, (f) => this.proofFailures.push(f));
      proofs.end();
      result.events_verified = proofs.verified;
      result.failures.push(...this.eventFailures, ...this.proofFailures);
      const ev = this.events;
      for (let i = 0; i < ev.n; i++) {
        if (!ev.used[i]) result.failures.push({ check: 'event_unexpected', file: 'events.ndjson', line: ev.lineNos[i], event_id: ev.ids[i] as string, message: `events.ndjson line ${ev.lineNos[i]} (event ${ev.ids[i] as string}) is not in the logged range` });
      }
    }
    result.ok = result.failures.length === 0;
    return result;
  }
}
