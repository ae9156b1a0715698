/**
 * The sliced hashes equal the one-go forms byte for byte (Idempotency-Keys claimed before keep
 * matching), whatever the strings hold at the slice boundaries, and the event loop turns between
 * slices.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { canonicalSha256, sha256InSlices } from '../../src/payload-hash';

const oneGo = (v: unknown) => createHash('sha256').update(canonicalize(v) as string).digest('hex');
const SLICE = 512 * 1024;

describe('payload hashes in slices', () => {
  const emoji = '\u{1F600}';
  const cases: [string, unknown][] = [
    ['a small body', { route: 'executions', body: { messages: [{ role: 'user', content: 'hi "there"\n' }], n: 1.5, ok: true, none: null, skip: undefined }, workflow_id: null }],
    ['nested arrays with holes and dates', { b: [1, undefined, [2, { z: 1, a: 'x' }]], a: new Date(0), 'é': 'ü' }],
    ['a long plain string', { body: 'the quarterly report '.repeat(200_000) }],
    // A surrogate pair straddles the first slice boundary (its high half is the slice's last unit).
    ['plain slices around one with a quote and a newline', { body: 'a'.repeat(SLICE * 2) + 'say "so"\n' + 'b'.repeat(SLICE + 3) }],
    ['a pair across a boundary', { body: 'a'.repeat(SLICE - 1) + emoji + 'b'.repeat(SLICE) }],
    ['pairs everywhere', { body: emoji.repeat(SLICE + 3) }],
    ['lone surrogates, escapes and control characters', { body: `\ud800x\udc00"\\\u0001\u2028`.repeat(120_000) + '\ud800' }],
    ['long strings as names and in arrays', { ['k'.repeat(SLICE + 5)]: ['v'.repeat(SLICE * 2 + 1), 'w'] }],
  ];

  it.each(cases)('%s: canonicalSha256 equals sha256 of canonicalize', async (_name, value) => {
    expect(await canonicalSha256(value)).toBe(oneGo(value));
  });

  it('sha256InSlices equals sha256 of the prefix and the bytes', async () => {
    for (const n of [0, 1, SLICE, SLICE + 1, 3 * SLICE + 7]) {
      const bytes = Buffer.alloc(n, 0x61);
      expect(await sha256InSlices('openai\n/v1/chat/completions\n{}\n', bytes)).toBe(createHash('sha256').update('openai\n/v1/chat/completions\n{}\n').update(bytes).digest('hex'));
    }
  });

  it('the event loop turns while a body of several slices is hashed', async () => {
    let turns = 0;
    const tick = () => {
      turns++;
      if (!done) setImmediate(tick);
    };
    let done = false;
    setImmediate(tick);
    await canonicalSha256({ body: 'x'.repeat(4 * SLICE) });
    done = true;
    expect(turns).toBeGreaterThanOrEqual(2);
  });
});
