/**
 * The log range's checks of an export (src/compliance/verify-stream.ts streams the files through
 * them): events.ndjson's lines kept as their hashes, proofs.ndjson's lines checked against them and
 * the checkpoint's root as they come.
 */
import { hash } from 'node:crypto';
import { InclusionVerifier } from '../integrity/merkle';
import type { Checkpoint } from '../integrity/note';
import type { VerifyFailure } from './export-format';
import type { TarMemberSink } from './tar';

const NL = 0x0a;

/** Splits pieces into lines (without their `\n`); a last line without one is a line too. */
export class Lines implements TarMemberSink {
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

const HEX64 = /^[0-9a-f]{64}$/;

/** events.ndjson's lines: per event its seq, line, id, leaf hash, prev_hash and chain hash. */
export class EventTable {
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
      this.fail({ check: 'event_unexpected', file: 'events.ndjson', line: lineNo, event_id: e.id as string, message: `events.ndjson line ${lineNo}: event seq ${String(seq)} appears twice` });
      return;
    }
    if (this.n === this.seqs.length) this.grow();
    const i = this.n++;
    this.bySeq?.set(seq, i);
    this.seqs[i] = typeof seq === 'number' ? seq : NaN;
    this.lineNos[i] = lineNo;
    this.ids.push(e.id);
    const at = i * 96;
    // Digests as 'binary' (latin1) strings written in place: half the cost of a Buffer per digest (src/integrity/hashes.ts, `sha256`).
    this.hashes.write(hash('sha256', `\u0000${text}`, 'binary'), at, 'latin1');
    const prev = e.prev_hash;
    if (typeof prev === 'string' && HEX64.test(prev)) {
      this.hashes.write(prev, at + 32, 'hex');
      this.prevHex[i] = 1;
    }
    this.hashes.write(hash('sha256', `${prev as string}${text}`, 'binary'), at + 64, 'latin1');
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
export class ProofCheck {
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
      this.fail({ check: 'event_missing', file: 'events.ndjson', index, position: pos, message: `log index ${index} (position ${pos}, seq ${String(p.seq)}): the logged event is missing from events.ndjson` });
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

