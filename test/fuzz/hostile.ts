/**
 * Hostile request bodies for the fuzz tests: values that break parsers, validators and storage
 * (huge strings, NUL, lone surrogates, deep nesting, extreme numbers, wrong types) mutated into
 * valid-shaped bodies, and byte-level mutations no JSON.stringify produces (duplicate keys,
 * `__proto__` keys, invalid UTF-8, truncation).
 */
import fc from 'fast-check';

/** `levels` nested arrays around a scalar. */
export function nested(levels: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
}

export const HOSTILE_NUMBERS = [1e308, -1e308, 2 ** 53 + 1, -(2 ** 53) - 1, 2147483648, -1, 0.5, 1e21, -0, 5e-324];

export const hostileString = fc.oneof(
  fc.string({ maxLength: 8 }).map((s) => `${s}\u0000${s}`),
  fc.constantFrom('\ud800', 'a\udfffb', '\ud83d', '\u0000', '\uffff\ufffe', '\u202e', '%00', '../../etc/passwd', "'; DROP TABLE permits; --", '${jndi:x}'),
  fc.integer({ min: 5_000, max: 120_000 }).map((n) => 'A'.repeat(n)),
  fc.integer({ min: 1_000, max: 20_000 }).map((n) => '\u{1F600}'.repeat(n)),
);

export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.constantFrom(...HOSTILE_NUMBERS),
  fc.integer({ min: 90, max: 130 }).map(nested),
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(null, true, false, [], {}, ''),
  fc.integer({ min: 1_000, max: 20_000 }).map((n) => Array.from({ length: n }, (_, i) => i)),
);

/** Every path (as a key list) to a node of a JSON value, the root included. */
function paths(value: unknown, prefix: Array<string | number> = [], out: Array<Array<string | number>> = []): Array<Array<string | number>> {
  out.push(prefix);
  if (value && typeof value === 'object' && out.length < 500) {
    for (const [k, v] of Object.entries(value)) paths(v, [...prefix, Array.isArray(value) ? Number(k) : k], out);
  }
  return out;
}

/** `value` with the node at the `pick`-th path replaced by `replacement` (or a new key added beside it). */
export function replaceAt(value: unknown, pick: number, replacement: unknown, addKey?: string): unknown {
  const all = paths(value);
  const target = all[pick % all.length];
  if (!target.length) return replacement;
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let node = copy;
  for (const k of target.slice(0, -1)) node = node[k] as Record<string | number, unknown>;
  const last = target[target.length - 1];
  if (addKey !== undefined && !Array.isArray(node)) Object.defineProperty(node, addKey, { value: replacement, enumerable: true, configurable: true, writable: true });
  else node[last] = replacement;
  return copy;
}

/** A valid-shaped value with one node replaced by a hostile one, or one unexpected key added. */
export function mutated(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc
    .tuple(valid, hostileValue, fc.nat(), fc.option(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('__proto__', 'constructor', 'prototype')), { freq: 3 }))
    .map(([v, h, pick, key]) => replaceAt(v, pick, h, key ?? undefined));
}

const INVALID_UTF8 = [Buffer.from([0xff]), Buffer.from([0xc3, 0x28]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]), Buffer.from([0xe2, 0x82])];

export type ByteMutation = 'duplicate_key' | 'proto_key' | 'invalid_utf8' | 'truncate' | 'raw_nul_escape' | 'trailing_garbage';

/** A byte-level mutation of a JSON text at position `at` (fraction of the length). */
export function mutateBytes(json: string, how: ByteMutation, at: number, variant: number): Buffer {
  const insideObject = () => {
    const opens = [...json.matchAll(/\{/g)].map((m) => m.index!);
    return opens.length ? opens[Math.floor(at * opens.length) % opens.length] + 1 : -1;
  };
  switch (how) {
    case 'duplicate_key': {
      const key = /"([^"\\]{1,40})":/.exec(json)?.[1] ?? 'operation';
      const i = insideObject();
      if (i < 0) return Buffer.from(json);
      const dup = variant % 2 ? `"${key}":null,` : `"${key}":{"nested":[1,2,3]},`;
      return Buffer.from(json.slice(0, i) + dup + json.slice(i));
    }
    case 'proto_key': {
      const i = insideObject();
      const keys = ['"__proto__":{"admin":true,"scope":"admin"},', '"constructor":{"prototype":{"polluted":1}},', '"__proto__":null,'];
      if (i < 0) return Buffer.from(`{${keys[variant % keys.length].slice(0, -1)}}`);
      return Buffer.from(json.slice(0, i) + keys[variant % keys.length] + json.slice(i));
    }
    case 'invalid_utf8': {
      const quotes = [...json.matchAll(/"/g)].map((m) => m.index!);
      const i = quotes.length ? quotes[Math.floor(at * quotes.length) % quotes.length] + 1 : 0;
      return Buffer.concat([Buffer.from(json.slice(0, i)), INVALID_UTF8[variant % INVALID_UTF8.length], Buffer.from(json.slice(i))]);
    }
    case 'truncate':
      return Buffer.from(json.slice(0, Math.floor(at * json.length)));
    case 'raw_nul_escape': {
      const quotes = [...json.matchAll(/":"/g)].map((m) => m.index!);
      if (!quotes.length) return Buffer.from(json);
      const i = quotes[Math.floor(at * quotes.length) % quotes.length] + 3;
      return Buffer.from(json.slice(0, i) + (variant % 2 ? '\\u0000' : '\\ud800') + json.slice(i));
    }
    case 'trailing_garbage':
      return Buffer.from(json + [' x', '}', '\u0000', ',{}'][variant % 4]);
  }
}

export const byteMutation = fc.constantFrom<ByteMutation>('duplicate_key', 'proto_key', 'invalid_utf8', 'truncate', 'raw_nul_escape', 'trailing_garbage');
