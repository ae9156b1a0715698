/**
 * `canonicalJsonbText` (src/events/canonical-jsonb.ts) writes RFC 8785 JSON straight from the
 * text PostgreSQL gives for a jsonb value; a record's leaf holds `canonicalJson` of the value pg
 * parses that text into, so the two must agree byte for byte on whatever jsonb can hold: random
 * JSON (unicode and control characters in names and strings, names whose UTF-16 order differs from
 * jsonb's length-then-bytes order, escapes in names, doubles, integers past 15 digits, decimals
 * with trailing zeros, exponents), each stored and read back as PostgreSQL writes it.
 * `canonicalJsonbLines` (an export's row parts) writes the same as UTF-8 lines straight into a chunk.
 *
 * The expected value is parsed with json5, not JSON.parse: V8's JSON.parse can give a member whose
 * name is written with an escape the name of an earlier-parsed object's member that those raw
 * characters spell (after `{"\\\\":1}`, `{"\\t":1}` parses as `{"\\\\":1}`), so an oracle built on
 * it fails on random input where canonicalJsonbText is right. docs/decisions/event-hash-chain.md
 * has the defect and why leaves are written from jsonb text.
 */
import fc from 'fast-check';
import JSON5 from 'json5';
import { Pool } from 'pg';
import { canonicalJson } from '../../../src/events/canonical-json';
import { canonicalJsonbLines, canonicalJsonbText } from '../../../src/events/canonical-jsonb';

/** The value a jsonb text holds, parsed by a parser other than the engine's JSON.parse. */
const parse = (text: string): unknown => JSON5.parse(text);


const tricky = fc.constantFrom('\b', '\f', '\n', '\r', '\t', '\x01', '\x1f', '\x7f', '"', '\\', '/', '\u2028', 'é', 'ｱ', '😀', 'a', 'B', ' ', 'aa');
const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: tricky })).map((s) => s.replace(/\0/g, ''));
// Numbers as JSON text, so that PostgreSQL's numeric keeps what was written (scale, digits past a double's).
const numberText = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
  fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map(String),
  fc.tuple(fc.integer({ min: -99999, max: 99999 }), fc.integer({ min: 0, max: 9999 }), fc.constantFrom('', '0', '00')).map(([i, f, z]) => `${i}.${f}${z}`),
  fc.tuple(fc.integer({ min: 1, max: 9 }), fc.integer({ min: -30, max: 30 })).map(([m, e]) => `${m}e${e}`),
  fc.constantFrom('0', '-0', '0.0', '-0.0', '1E2', '123456789012345', '1234567890123456', '9007199254740993'),
);
const jsonText: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('true', 'false', 'null'),
    numberText,
    text.map((s) => JSON.stringify(s)),
    fc.array(tie('value'), { maxLength: 4 }).map((a) => `[${a.join(',')}]`),
    fc.array(fc.tuple(text, tie('value')), { maxLength: 5 }).map((m) => `{${m.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
  ),
})).value;

describe('canonical JSON from jsonb text', () => {
  let pool: Pool;
  beforeAll(() => {
    pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 1 });
  });
  afterAll(() => pool.end());

  /** PostgreSQL's text of each JSON text as jsonb. */
  const asJsonb = async (texts: string[]) =>
    (await pool.query<{ t: string }>('SELECT v::jsonb::text AS t FROM unnest($1::text[]) WITH ORDINALITY AS u(v, i) ORDER BY i', [texts])).rows.map((r) => r.t);

  it('writes what canonicalJson writes of the parsed value, on random JSON as PostgreSQL writes it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(jsonText, { minLength: 1, maxLength: 20 }), async (texts) => {
        for (const stored of await asJsonb(texts)) {
          let expected: string | Error;
          try {
            expected = canonicalJson(parse(stored));
          } catch (err) {
            expected = err as Error;
          }
          if (expected instanceof Error) {
            expect(() => canonicalJsonbText(stored)).toThrow(expected.message);
            expect(() => canonicalJsonbLines([stored])).toThrow(expected.message);
          } else {
            expect([stored, canonicalJsonbText(stored)]).toEqual([stored, expected]);
            expect([stored, canonicalJsonbLines([stored]).toString('utf8')]).toEqual([stored, `${expected}\n`]);
          }
        }
        // Many values in one chunk, the chunk grown on the way (multi-byte text sized at a byte a unit).
        const good = (await asJsonb(texts)).filter((t) => {
          try {
            canonicalJson(parse(t));
            return true;
          } catch {
            return false;
          }
        });
        const many = [...good, ...good, ...good];
        expect(canonicalJsonbLines(many).equals(Buffer.from(many.map((t) => `${canonicalJson(parse(t))}\n`).join('')))).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  it('orders members by their names as UTF-16 code units, decoding escaped names, at every depth', async () => {
    const [stored] = await asJsonb([JSON.stringify({ b: 1, aa: [{ '😀': 1, 'ｱ': 2, z: { y: 1, x: 2 } }], 'a\n': 2, 'a"': 3, '\u0001': 4, a: { '': 0 } })]);
    // jsonb's own order: shorter names first ("b" before "aa").
    expect(stored.indexOf('"b": ')).toBeLessThan(stored.indexOf('"aa": '));
    expect(canonicalJsonbText(stored)).toBe('{"\\u0001":4,"a":{"":0},"a\\n":2,"a\\"":3,"aa":[{"z":{"x":2,"y":1},"😀":1,"ｱ":2}],"b":1}');
    expect(canonicalJsonbText(stored)).toBe(canonicalJson(parse(stored)));
    expect(canonicalJsonbLines([stored, stored]).toString('utf8')).toBe(`${canonicalJsonbText(stored)}\n`.repeat(2));
    // Names alike in their first six units (the line writer's sort key), past ASCII there or after.
    const [alike] = await asJsonb([JSON.stringify({ abcdefgh: 1, abcdefg: 2, 'abcdef\u007f': 3, abcdefé: 4, abcdeé: 5, 'abcde😀': 6, abcdef: 7, 'abcdef\n': 8, abc: 9 })]);
    expect(canonicalJsonbLines([alike]).toString('utf8')).toBe(`${canonicalJson(parse(alike))}\n`);
  });

  it('writes numbers as their doubles: trailing zeros, long integers, exponents; refuses one past a double', async () => {
    const [stored] = await asJsonb(['[1.50, 0.0, -0, 12345678901234567890, 1e-7, 1e21, 123456789012345, 100]']);
    expect(canonicalJsonbText(stored)).toBe('[1.5,0,0,12345678901234567000,1e-7,1e+21,123456789012345,100]');
    const [huge] = await asJsonb([`1${'0'.repeat(400)}`]);
    expect(() => canonicalJsonbText(huge)).toThrow('Infinity is not allowed');
    expect(() => canonicalJsonbText('{"a": 1')).toThrow(SyntaxError);
  });
});
