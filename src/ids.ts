import { v7 as uuidv7 } from 'uuid';
import { randomBytes } from 'node:crypto';

// The UUIDv7's 16 bytes are written here and hex-encoded: the same text as its dashed form without
// the dashes, without building that form and a regular expression's copy of it for every id.
const idBytes = Buffer.alloc(16);

/** The id kind of a call record (`calls.id`, the request id of its timeline). */
export const CALL_ID_KIND = 'exec_req';

/** Time-ordered, kind-prefixed ids: `exec_req_0192f3...` (a UUIDv7 in 32 hex digits). */
export function newId(kind: string): string {
  uuidv7(undefined, idBytes);
  return `${kind}_${idBytes.toString('hex')}`;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random base62 string with `length` characters (rejection sampling keeps it uniform). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += BASE62[b % 62];
    }
  }
  return out;
}
