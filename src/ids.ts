import { v7 as uuidv7 } from 'uuid';
import { randomBytes } from 'node:crypto';

/** Time-ordered, kind-prefixed ids: `exec_req_0192f3...`. */
export function newId(kind: string): string {
  return `${kind}_${uuidv7().replace(/-/g, '')}`;
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
