/**
 * Text PostgreSQL refuses, made storable at the one place every text passes: the query
 * parameters. A NUL character is refused by text columns ("invalid byte sequence") and its JSON
 * escape `\u0000` by jsonb ("unsupported Unicode escape sequence"); a lone UTF-16 surrogate escape
 * (`\ud800` without its pair, which JSON.stringify writes for a lone surrogate) is refused by jsonb
 * too. Each becomes U+FFFD, the Unicode replacement character, so a prompt or a provider answer
 * carrying one is recorded instead of failing the call's record. (A raw lone surrogate in a text
 * parameter is already written as U+FFFD by Node's UTF-8 encoder.) What reaches the provider is
 * not touched: this applies to what Tollgate stores.
 */

// eslint-disable-next-line no-control-regex -- matching NUL is the point
const SUSPECT = /\u0000|\\u0000|\\u[dD][89a-fA-F]/;
/** One JSON escape (or an escaped character) at a time, so `\\u0000` (an escaped backslash) is left alone. */
const JSON_ESCAPE = /\\(?:u([0-9a-fA-F]{4})|[\s\S])/g;

const isHigh = (hex: string) => /^[dD][89abAB]/.test(hex);
const isLow = (hex: string) => /^[dD][c-fC-F]/.test(hex);

export function storableText(s: string): string {
  if (!SUSPECT.test(s)) return s;
  // eslint-disable-next-line no-control-regex -- matching NUL is the point
  if (s.includes('\u0000')) s = s.replace(/\u0000/g, '\uFFFD');
  if (!s.includes('\\u')) return s;
  let out = '';
  let last = 0;
  let m: RegExpExecArray | null;
  JSON_ESCAPE.lastIndex = 0;
  const escapes: Array<{ start: number; end: number; hex: string | null }> = [];
  while ((m = JSON_ESCAPE.exec(s)) !== null) escapes.push({ start: m.index, end: m.index + m[0].length, hex: m[1] ?? null });
  for (let i = 0; i < escapes.length; i++) {
    const e = escapes[i];
    if (e.hex === null) continue;
    let bad = e.hex === '0000';
    if (isHigh(e.hex)) {
      const next = escapes[i + 1];
      const paired = next && next.start === e.end && next.hex !== null && isLow(next.hex);
      if (paired) {
        i += 1; // keep the pair
        continue;
      }
      bad = true;
    } else if (isLow(e.hex)) {
      bad = true; // a low surrogate not consumed by a preceding high one
    }
    if (bad) {
      out += s.slice(last, e.start) + '\\ufffd';
      last = e.end;
    }
  }
  return last === 0 ? s : out + s.slice(last);
}

/** A query parameter made storable (strings, and strings inside arrays; objects are JSON-encoded first). */
export function storableParam(v: unknown): unknown {
  if (typeof v === 'string') return storableText(v);
  if (Array.isArray(v)) {
    // Copied only when an element changes: arrays of numbers or clean strings (the sequencer's
    // hundreds of seqs and hashes per statement) pass as they are.
    for (let i = 0; i < v.length; i++) if (storableParam(v[i]) !== v[i]) return v.map(storableParam);
    return v;
  }
  if (v !== null && typeof v === 'object' && !(v instanceof Date) && !Buffer.isBuffer(v) && !ArrayBuffer.isView(v)) {
    return storableText(JSON.stringify(v));
  }
  return v;
}
