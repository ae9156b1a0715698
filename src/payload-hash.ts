/**
 * SHA-256 of a request body for its Idempotency-Key, in slices that let the event loop run between
 * them: a body of the limit's size hashed in one go (its canonical form written, then hashed) held
 * the loop for every other request. The digests are those of the one-go forms, byte for byte, so
 * keys claimed before keep matching.
 */
import { setImmediate as turn } from 'node:timers/promises';
import { createHash, type Hash } from 'node:crypto';
import { canonicalJson } from './events/canonical-json';
import { jsonStringText } from './json-string';

/** Characters (or bytes) hashed between two turns of the event loop. */
const SLICE = 512 * 1024;


/** sha256 hex of the bytes, `SLICE` at a time. */
export async function sha256InSlices(prefix: string, bytes: Buffer): Promise<string> {
  const h = createHash('sha256').update(prefix);
  for (let i = 0; i < bytes.length; i += SLICE) {
    if (i > 0) await turn();
    h.update(bytes.subarray(i, i + SLICE));
  }
  return h.digest('hex');
}

/**
 * sha256 hex of the RFC 8785 canonical JSON of `value` (what `canonicalize` writes, as UTF-8). Long
 * strings are written a slice at a time, never splitting a surrogate pair, so each slice's JSON
 * text is exactly its part of the whole string's.
 */
export async function canonicalSha256(value: unknown): Promise<string> {
  const h = createHash('sha256');
  await feed(h, value, { pending: 0 });
  return h.digest('hex');
}

interface Budget {
  /** Characters hashed since the last turn of the event loop. */
  pending: number;
}

async function put(h: Hash, s: string, b: Budget): Promise<void> {
  h.update(s);
  b.pending += s.length;
  if (b.pending >= SLICE) {
    b.pending = 0;
    await turn();
  }
}

async function feed(h: Hash, value: unknown, b: Budget): Promise<void> {
  if (typeof value === 'string' && value.length > SLICE) return feedLongString(h, value, b);
  if (value === null || typeof value !== 'object') return put(h, canonicalJson(value), b);
  const o = value as Record<string, unknown>;
  if (o.toJSON instanceof Function) return feed(h, (o.toJSON as () => unknown).call(o), b);
  if (Array.isArray(o)) {
    await put(h, '[', b);
    for (let i = 0; i < o.length; i++) {
      const v: unknown = o[i];
      if (i > 0) await put(h, ',', b);
      await feed(h, v === undefined || typeof v === 'symbol' ? null : v, b);
    }
    return put(h, ']', b);
  }
  const names = Object.keys(o).sort();
  await put(h, '{', b);
  let first = true;
  for (const name of names) {
    const v = o[name];
    if (v === undefined || typeof v === 'symbol') continue;
    await put(h, `${first ? '' : ','}${JSON.stringify(name)}:`, b);
    await feed(h, v, b);
    first = false;
  }
  return put(h, '}', b);
}

async function feedLongString(h: Hash, s: string, b: Budget): Promise<void> {
  await put(h, '"', b);
  for (let i = 0; i < s.length; ) {
    let end = Math.min(s.length, i + SLICE);
    // A high surrogate at the slice's end stays with its low surrogate in the next slice.
    const last = s.charCodeAt(end - 1);
    if (end < s.length && last >= 0xd800 && last <= 0xdbff) end--;
    await put(h, jsonStringText(s.slice(i, end)), b);
    i = end;
  }
  await put(h, '"', b);
}
