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
import { createHash, hash } from 'node:crypto';
import { InclusionVerifier } from '../integrity/merkle';
import { openNote, parseCheckpointText, parseVerifierKey, type Checkpoint, type NoteVerifier } from '../integrity/note';
import { MANIFEST_FORMAT, type ExportManifest, type VerifyFailure, type VerifyResult } from './export-format';
import type { TarMemberSink } from './tar';

const NL = 0x0a;

/** Splits pieces into lines (without their `\n`); a last line without one is a line too. */
class Lines implements TarMemberSink {
  private carry: Buffer | null = null;
  count = 0;

  constructor(private readonly onLine: (line: Buffer, lineNo: number) => void) {}

  write(piece: Buffer): void {
    let from = 0;
    for (let nl = piece.indexOf(NL, from); nl >= 0; nl = piece.indexOf(NL, from)) {
      const part = piece.subarray(from, nl);
      if (this.carry) {
        const line = Buffer.concat([this.carry, part]);
        this.carry = null;
        this.onLine(line, ++this.count);
      } else this.onLine(part, ++this.count);
      from = nl + 1;
    }
    if (from < piece.length) this.carry = this.carry ? Buffer.concat([this.carry, piece.subarray(from)]) : Buffer.from(piece.subarray(from));
  }

  end(): void {
    if (this.carry) this.onLine(this.carry, ++this.count);
    this.carry = null;
  }
}

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

const HEX64 = /^[0-9a-f]{64}$/;

/** events.ndjson's lines: per event its seq, line, id, leaf hash, prev_hash and chain hash. */
class EventTable {
  n = 0;
  seqs = new Float64Array(1024);
  lineNos = new Uint32Array(1024);
  used = new Uint8Array(1024);
  /** Per event: leaf hash, prev_hash (as bytes, when it is 64 hex digits), sha256(prev_hash ‖ line). */
  hashes = Buffer.alloc(1024 * 96);
  prevHex = new Uint8Array(1024);
  ids: unknown[] = [];
  private bySeq: Map<unknown, number> | null = null;

  constructor(readonly fail: (f: VerifyFailure) => void) {}

  private grow(): void {
    const cap = this.seqs.length * 2;
    const g = <T extends Float64Array | Uint32Array | Uint8Array>(a: T, C: new (n: number) => T): T => {
      const b = new C(cap);
      b.set(a);
      return b;
    };
    this.seqs = g(this.seqs, Float64Array);
    this.lineNos = g(this.lineNos, Uint32Array);
    this.used = g(this.used, Uint8Array);
    this.prevHex = g(this.prevHex, Uint8Array);
    const h = Buffer.alloc(cap * 96);
    this.hashes.copy(h);
    this.hashes = h;
  }

  /** The event of a seq, or -1: a binary search while seqs come in increasing order, else a map. */
  find(seq: unknown): number {
    if (this.bySeq) return this.bySeq.get(seq) ?? -1;
    if (typeof seq !== 'number') return -1;
    let lo = 0;
    let hi = this.n - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = this.seqs[mid];
      if (s === seq) return mid;
      if (s < seq) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  add(bytes: Buffer, lineNo: number): void {
    let e: { seq: unknown; id: unknown; prev_hash: unknown };
    let text: string;
    try {
      text = bytes.toString('utf8');
      e = JSON.parse(text) as typeof e;
      // A line that is JSON but no object fails as the verifier's property reads did.
      if (e === null || typeof e !== 'object') throw new TypeError('not an object');
    } catch {
      this.fail({ check: 'event_altered', file: 'events.ndjson', line: lineNo, message: `events.ndjson line ${lineNo} is not JSON` });
      return;
    }
    const seq = e.seq;
    if (!this.bySeq && !(typeof seq === 'number' && (this.n === 0 || seq > this.seqs[this.n - 1]))) {
      this.bySeq = new Map();
      for (let i = 0; i < this.n; i++) this.bySeq.set(this.seqs[i], i);
    }
    if (this.bySeq?.has(seq)) {
      this.fail({ check: 'event_unexpected', file: 'events.ndjson', line: lineNo, event_id: e.id as string, message: `events.ndjson line ${lineNo}: event seq ${seq} appears twice` });
      return;
    }
    if (this.n === this.seqs.length) this.grow();
    const i = this.n++;
    this.bySeq?.set(seq, i);
    this.seqs[i] = typeof seq === 'number' ? seq : NaN;
    this.lineNos[i] = lineNo;
    this.ids.push(e.id);
    const at = i * 96;
    hash('sha256', `\u0000${text}`, 'buffer').copy(this.hashes, at);
    const prev = e.prev_hash;
    if (typeof prev === 'string' && HEX64.test(prev)) {
      this.hashes.write(prev, at + 32, 'hex');
      this.prevHex[i] = 1;
    }
    hash('sha256', `${prev as string}${text}`, 'buffer').copy(this.hashes, at + 64);
  }

  leafEquals(i: number, leaf: Buffer): boolean {
    return leaf.length === 32 && this.hashes.compare(leaf, 0, 32, i * 96, i * 96 + 32) === 0;
  }

  /** Whether event i's prev_hash is the chain hash of event j (sha256(j's prev_hash ‖ j's bytes)). */
  continues(i: number, j: number): boolean {
    return this.prevHex[i] === 1 && this.hashes.compare(this.hashes, j * 96 + 64, j * 96 + 96, i * 96 + 32, i * 96 + 64) === 0;
  }
}

/** proofs.ndjson's lines checked as they come, against the events and the checkpoint's root. */
class ProofCheck {
  private readonly inclusion: InclusionVerifier;
  private prev = -1;
  lines = 0;
  verified = 0;

  constructor(
    private readonly range: { first: number; last: number },
    checkpoint: Checkpoint,
    private readonly events: EventTable,
    private readonly fail: (f: VerifyFailure) => void,
  ) {
    // Neighbouring leaves' proofs share their upper nodes: each is hashed once (merkle.ts).
    this.inclusion = new InclusionVerifier(checkpoint.size, checkpoint.root);
  }

  line(bytes: Buffer | null): void {
    const k = this.lines++;
    const index = this.range.first + k;
    if (index > this.range.last) {
      if (index === this.range.last + 1) this.fail({ check: 'proof', file: 'proofs.ndjson', line: k + 1, message: "proofs.ndjson has lines beyond the manifest's range" });
      return;
    }
    const pos = index + 1;
    let p: { index: number; seq: unknown; leaf_hash: string; proof: unknown };
    let leaf: Buffer;
    try {
      p = JSON.parse(bytes ? bytes.toString('utf8') : 'null') as typeof p;
      if (!p || p.index !== index) throw new Error('wrong index');
    } catch {
      this.fail({ check: 'proof', file: 'proofs.ndjson', line: k + 1, index, position: pos, message: `proofs.ndjson line ${k + 1}: no proof for log index ${index}` });
      this.prev = -1;
      return;
    }
    const e = this.events.find(p.seq);
    if (e >= 0) this.events.used[e] = 1;
    const proof = p.proof;
    if (typeof p.leaf_hash !== 'string' || !Array.isArray(proof) || !proof.every((h) => typeof h === 'string') || !this.inclusion.verify((leaf = Buffer.from(p.leaf_hash, 'base64')), index, proof)) {
      this.fail({ check: 'proof', file: 'proofs.ndjson', line: k + 1, index, position: pos, message: `log index ${index} (position ${pos}): the inclusion proof does not lead to the checkpoint's root` });
      this.prev = -1;
      return;
    }
    if (e < 0) {
      this.fail({ check: 'event_missing', file: 'events.ndjson', index, position: pos, message: `log index ${index} (position ${pos}, seq ${p.seq}): the logged event is missing from events.ndjson` });
      this.prev = -1;
      return;
    }
    const line = this.events.lineNos[e];
    const id = this.events.ids[e] as string;
    if (!this.events.leafEquals(e, leaf)) {
      this.fail({ check: 'event_altered', file: 'events.ndjson', line, index, position: pos, event_id: id, message: `log index ${index} (position ${pos}, event ${id}, events.ndjson line ${line}): the event's bytes differ from what the log holds` });
      this.prev = -1;
      return;
    }
    if (this.prev >= 0 && !this.events.continues(e, this.prev)) {
      this.fail({ check: 'chain', file: 'events.ndjson', line, index, position: pos, event_id: id, message: `log index ${index} (event ${id}): prev_hash does not continue the hash chain` });
    }
    this.prev = e;
    this.verified += 1;
  }

  /** Indexes the file had no line for. */
  end(): void {
    while (this.range.first + this.lines <= this.range.last) this.line(null);
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
