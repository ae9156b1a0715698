/**
 * Opaque list cursors: base64url of `{"v":1, ...fields}` (string fields). A cursor that does not
 * decode, lacks a field or fails `valid` is a 400 `invalid_cursor`. And the page every cursor list
 * answers with (`cursorPage`).
 */
import { z } from 'zod';
import { errors } from '../errors';

export function encodeCursor(fields: Record<string, string>): string {
  return Buffer.from(JSON.stringify({ v: 1, ...fields })).toString('base64url');
}

export function decodeCursor<K extends string>(cursor: string, keys: K[], valid: (c: Record<K, string>) => boolean = () => true): Record<K, string> {
  try {
    const c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Record<string, unknown> | null;
    if (c?.v === 1 && keys.every((k) => typeof c[k] === 'string') && valid(c as Record<K, string>)) return c as Record<K, string>;
  } catch {
    /* fall through */
  }
  throw errors.validation([{ path: 'cursor', message: 'Invalid cursor; pass next_cursor from a previous page unchanged', code: 'invalid_cursor' }]);
}

/**
 * A list response, `{object: "list", data, next_cursor}`, from up to `limit + 1` rows in list
 * order: the extra row only says that another page exists; the cursor names the page's last row.
 */
export function cursorPage<R, V>(rows: R[], limit: number, view: (r: R) => V, cursorOf: (last: R) => string) {
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  return {
    object: 'list' as const,
    data: page.map(view),
    next_cursor: more && page.length > 0 ? cursorOf(page[page.length - 1]) : null,
  };
}

/** The query of a plain cursor list: `limit` (1–100, default 20) and the previous page's `next_cursor`. */
export const pageSchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict();
