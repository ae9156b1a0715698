/**
 * The JSON bytes of a provider request body. A body whose strings are long (a prompt near the body
 * limit) is written a slice at a time, with the event loop turning between slices, straight into
 * bytes: one `JSON.stringify` of it held the loop for every other request, and its one large string
 * (then copied again to the socket) brought on a full garbage collection. The bytes are those of
 * `JSON.stringify`, exactly.
 */

import { setImmediate as turn } from 'node:timers/promises';
import { jsonStringText } from '../json-string';

/** Characters written between two turns of the event loop; also the string length written in slices. */
const SLICE = 512 * 1024;
/** Bodies whose strings hold fewer characters in all are written in one go. */
const SLICED_ABOVE_CHARS = 1024 * 1024;


/** Characters in the strings of `v` (stops counting past `limit`). */
function stringChars(v: unknown, limit: number): number {
  if (typeof v === 'string') return v.length;
  if (!v || typeof v !== 'object') return 0;
  let n = 0;
  for (const x of Array.isArray(v) ? v : Object.values(v)) {
    n += stringChars(x, limit - n);
    if (n > limit) break;
  }
  return n;
}

/** The body as JSON: a string for ordinary bodies, bytes written in slices for long ones. */
export async function jsonRequestBody(body: unknown): Promise<string | Buffer> {
  if (stringChars(body, SLICED_ABOVE_CHARS) <= SLICED_ABOVE_CHARS) return JSON.stringify(body);
  const w = new SliceWriter();
  await w.value(body, '');
  return w.bytes();
}

/** A value whose toJSON was already applied (JSON.stringify applies it once). */
class Resolved {
  constructor(readonly v: unknown) {}
}

/** What JSON.stringify serializes for `v` as the member `key`: toJSON applied, boxed primitives unboxed. */
function resolved(v: unknown, key: string): unknown {
  if (v instanceof Resolved) return v.v;
  if (v !== null && (typeof v === 'object' || typeof v === 'bigint') && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
    v = (v as { toJSON(k: string): unknown }).toJSON(key);
  }
  if (v instanceof String || v instanceof Number || v instanceof Boolean) return v.valueOf();
  return v;
}

class SliceWriter {
  private readonly parts: Buffer[] = [];
  private pending = 0;

  async put(s: string): Promise<void> {
    this.parts.push(Buffer.from(s, 'utf8'));
    this.pending += s.length;
    if (this.pending >= SLICE) {
      this.pending = 0;
      await turn();
    }
  }

  bytes(): Buffer {
    return Buffer.concat(this.parts);
  }

  /** Writes `v` as JSON.stringify writes the member `key`; false when it writes nothing (undefined, a function, a symbol). */
  async value(raw: unknown, key: string): Promise<boolean> {
    const v = resolved(raw, key);
    if (typeof v === 'string' && v.length > SLICE) {
      await this.longString(v);
      return true;
    }
    if (v === null || typeof v !== 'object' || stringChars(v, SLICE) <= SLICE) {
      const s = JSON.stringify(v);
      if (s === undefined) return false;
      await this.put(s);
      return true;
    }
    if (Array.isArray(v)) {
      await this.put('[');
      for (let i = 0; i < v.length; i++) {
        if (i > 0) await this.put(',');
        if (!(await this.value(v[i], String(i)))) await this.put('null');
      }
      await this.put(']');
      return true;
    }
    await this.put('{');
    let first = true;
    for (const k of Object.keys(v)) {
      const x = resolved((v as Record<string, unknown>)[k], k);
      // Members JSON.stringify leaves out.
      if (x === undefined || typeof x === 'function' || typeof x === 'symbol') continue;
      await this.put(`${first ? '' : ','}${JSON.stringify(k)}:`);
      await this.value(new Resolved(x), k);
      first = false;
    }
    await this.put('}');
    return true;
  }

  private async longString(s: string): Promise<void> {
    await this.put('"');
    for (let i = 0; i < s.length; ) {
      let end = Math.min(s.length, i + SLICE);
      // A high surrogate at the slice's end stays with its low surrogate in the next slice.
      const last = s.charCodeAt(end - 1);
      if (end < s.length && last >= 0xd800 && last <= 0xdbff) end--;
      await this.put(jsonStringText(s.slice(i, end)));
      i = end;
    }
    await this.put('"');
  }
}
