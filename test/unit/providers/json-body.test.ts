/**
 * Provider request bodies: long ones are written in slices, with the event loop turning between
 * them, into exactly the bytes JSON.stringify gives.
 */
import { jsonRequestBody } from '../../../src/providers/json-body';

const SLICE = 512 * 1024;
const bytesOf = async (v: unknown) => {
  const b = await jsonRequestBody(v);
  return Buffer.isBuffer(b) ? b : Buffer.from(b);
};

describe('provider request bodies as JSON', () => {
  const emoji = '\u{1F600}';
  const long = 'the quarterly report shows steady growth '.repeat(60_000);
  const cases: [string, unknown][] = [
    ['an ordinary chat body', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi "there"\n' }], max_tokens: 64, stream: false }],
    ['a long prompt among other members', { model: 'm', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: long }], temperature: 0.2, skip: undefined, f: () => 1 }],
    ['plain slices (written as they are) around one with a quote and a newline', { content: 'a'.repeat(SLICE * 2) + 'say "so"\n' + 'b'.repeat(SLICE + 3) }],
    ['a surrogate pair across a slice boundary', { messages: [{ content: 'a'.repeat(SLICE - 1) + emoji + 'b'.repeat(SLICE) }] }],
    ['lone surrogates, escapes and control characters', { content: `\ud800x\udc00"\\\u0001\u2028`.repeat(200_000) + '\udbff' }],
    ['arrays with holes, NaN, dates and boxed values', { input: [long, undefined, () => 1, NaN, -0, new Date(0), new String('s'), [long, { a: undefined }]], n: Infinity }],
    ['content parts', { messages: [{ role: 'user', content: [{ type: 'text', text: long }, { type: 'image_url', image_url: { url: 'data:image/png;base64,' + 'A'.repeat(2 * SLICE) } }] }] }],
  ];

  it.each(cases)('%s: the bytes of JSON.stringify', async (_name, body) => {
    expect((await bytesOf(body)).equals(Buffer.from(JSON.stringify(body)))).toBe(true);
  });

  it('a long body is written as bytes with the event loop turning; a short one is one string', async () => {
    expect(typeof (await jsonRequestBody({ a: 'short' }))).toBe('string');
    let turns = 0;
    let done = false;
    const tick = () => {
      turns++;
      if (!done) setImmediate(tick);
    };
    setImmediate(tick);
    const b = await jsonRequestBody({ messages: [{ content: 'x'.repeat(4 * SLICE) }] });
    done = true;
    expect(Buffer.isBuffer(b)).toBe(true);
    expect(turns).toBeGreaterThanOrEqual(2);
  });
});
