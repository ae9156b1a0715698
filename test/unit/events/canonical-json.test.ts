/**
 * canonicalJson (src/events/canonical-json.ts) must write exactly what the `canonicalize` package
 * writes, or every leaf hashed before it would stop verifying.
 */
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { canonicalJson } from '../../../src/events/canonical-json';

describe('canonicalJson', () => {
  it('equals canonicalize on random JSON (unicode names, integer-like names, nested arrays and objects)', () => {
    const name = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), fc.nat().map(String));
    const json = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constant(null),
        fc.boolean(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.integer(),
        fc.string({ unit: 'binary' }),
        fc.array(tie('value')),
        fc.dictionary(name, tie('value')),
      ),
    })).value;
    fc.assert(
      fc.property(json, (v) => {
        expect(canonicalJson(v)).toBe(canonicalize(v));
      }),
      { numRuns: 3000, seed: 8785 },
    );
  });

  it('leaves out undefined and symbol members, writes them as null in arrays, honours toJSON, and refuses NaN and Infinity as the package does', () => {
    const odd = { b: undefined, a: [undefined, Symbol('s'), new Date(0)], c: Symbol('t'), '10': 1, '9': 2, d: { toJSON: () => ({ z: 1, y: [2] }) } };
    expect(canonicalJson(odd)).toBe(canonicalize(odd));
    expect(canonicalJson(undefined)).toBe(canonicalize(undefined));
    expect(() => canonicalJson({ a: Number.NaN })).toThrow('NaN is not allowed');
    expect(() => canonicalize({ a: Number.NaN })).toThrow('NaN is not allowed');
    expect(() => canonicalJson([Number.POSITIVE_INFINITY])).toThrow('Infinity is not allowed');
  });
});
