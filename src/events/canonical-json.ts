/**
 * RFC 8785 (JCS) JSON text of a value: byte for byte what the `canonicalize` package writes
 * (object members sorted by UTF-16 code units, strings and numbers as JSON.stringify writes them,
 * undefined and symbol members left out, `toJSON` honoured, NaN and Infinity refused), written
 * into one string with loops rather than a reduce of template strings per member. Every leaf a
 * chain, a checkpoint, an export or an archive hashes goes through it, so its cost per record
 * counts once per record verified or archived. test/unit/events/canonical-json.test.ts checks it
 * against the package.
 */

/** Members' names as JSON strings, kept for the names that recur (columns, envelope fields). */
const quotedNames = new Map<string, string>();
const QUOTED_NAMES_MAX = 4096;

function quoted(name: string): string {
  let q = quotedNames.get(name);
  if (q === undefined) {
    q = JSON.stringify(name);
    if (quotedNames.size < QUOTED_NAMES_MAX && name.length <= 64) quotedNames.set(name, q);
  }
  return q;
}

export function canonicalJson(value: unknown): string {
  return write(value) as string;
}

function write(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new Error(Number.isNaN(value) ? 'NaN is not allowed' : 'Infinity is not allowed');
    return JSON.stringify(value);
  }
  const o = value as Record<string, unknown>;
  if (o.toJSON instanceof Function) return write((o.toJSON as () => unknown).call(o));
  if (Array.isArray(o)) {
    let s = '[';
    for (let i = 0; i < o.length; i++) {
      const v: unknown = o[i];
      if (i > 0) s += ',';
      s += write(v === undefined || typeof v === 'symbol' ? null : v);
    }
    return `${s}]`;
  }
  const names = Object.keys(o);
  for (let i = 1; i < names.length; i++) {
    if (names[i - 1] > names[i]) {
      names.sort();
      break;
    }
  }
  let s = '{';
  let first = true;
  for (const name of names) {
    const v = o[name];
    if (v === undefined || typeof v === 'symbol') continue;
    if (!first) s += ',';
    s += `${quoted(name)}:${write(v)}`;
    first = false;
  }
  return `${s}}`;
}
