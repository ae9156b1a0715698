/**
 * NDJSON lines written as UTF-8 straight into one growing chunk, a piece at a time: an export's or
 * archive's events and proofs files. Each line was a string built of many pieces (a record's leaf
 * of ~30 members, its jsonb written to a string first) that the chunk then copied again as UTF-8:
 * most of the garbage an archive made per leaf, and two more passes over its bytes.
 */
import { canonicalJsonbInto } from './canonical-jsonb';

export class NdjsonChunk {
  buf: Buffer;
  n = 0;
  lines = 0;

  constructor(bytes: number) {
    this.buf = Buffer.allocUnsafe(Math.max(256, Math.ceil(bytes)));
  }

  /** Room for `bytes` more, the chunk doubled (at least) when it lacks it. */
  reserve(bytes: number): void {
    if (this.buf.length - this.n >= bytes) return;
    const grown = Buffer.allocUnsafe(Math.max(2 * this.buf.length, this.n + bytes));
    this.buf.copy(grown, 0, 0, this.n);
    this.buf = grown;
  }

  /** Text known to be ASCII (the writer's own names and punctuation, numbers, base64, ISO times): a byte per unit. */
  ascii(s: string): void {
    this.reserve(s.length);
    const b = this.buf;
    let k = this.n;
    // Unit by unit: most pieces are a few dozen bytes, less than a call into Buffer.write costs.
    for (let i = 0; i < s.length; i++) b[k++] = s.charCodeAt(i);
    this.n = k;
  }

  /** Any text, as UTF-8. */
  text(s: string): void {
    this.reserve(3 * s.length);
    this.n += this.buf.write(s, this.n, 'utf8');
  }

  /** `JSON.stringify(v)` of a string, number, boolean or null (a string of printable ASCII copied as it is, any other as JSON.stringify writes it). */
  json(v: string | number | boolean | null): void {
    if (typeof v !== 'string') {
      this.ascii(String(JSON.stringify(v)));
      return;
    }
    this.reserve(v.length + 2);
    const b = this.buf;
    let k = this.n;
    b[k++] = 0x22;
    for (let i = 0; i < v.length; i++) {
      const c = v.charCodeAt(i);
      if (c < 0x20 || c === 0x22 || c === 0x5c || c >= 0x80) {
        this.text(JSON.stringify(v));
        return;
      }
      b[k++] = c;
    }
    b[k++] = 0x22;
    this.n = k;
  }

  /** A jsonb value's text in its canonical form (RFC 8785, src/events/canonical-jsonb.ts), or `null`. */
  jsonb(text: string | null): void {
    if (text === null) this.ascii('null');
    else canonicalJsonbInto(this, text);
  }

  /** Ends the line. */
  endLine(): void {
    this.reserve(1);
    this.buf[this.n++] = 0x0a;
    this.lines += 1;
  }

  /** The lines written, as a view of the chunk. */
  bytes(): Buffer {
    return this.buf.subarray(0, this.n);
  }
}

/**
 * A file's bytes per line so far, to size the next batch's chunk (an eighth more): a chunk sized
 * for the batch is written into once, not grown and copied.
 */
export class LineBytes {
  perLine = 2048;
  saw(chunk: NdjsonChunk): void {
    if (chunk.lines > 0) this.perLine = Math.ceil((chunk.n / chunk.lines) * 1.125);
  }
}
