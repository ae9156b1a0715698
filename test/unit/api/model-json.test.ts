import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { readModelJson } from '../../../src/api/middleware/model-json';
import { decodeUtf8 } from '../../../src/utf8';
import { MAX_JSON_DEPTH } from '../../../src/json-depth';

/** A request whose body arrives in `chunkBytes` pieces (as a socket hands them over). */
function request(body: Buffer | string, chunkBytes = 7, headers: Record<string, string> = {}): IncomingMessage {
  const bytes = Buffer.from(body);
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += chunkBytes) chunks.push(bytes.subarray(i, i + chunkBytes));
  const r = Readable.from(chunks, { objectMode: false }) as unknown as IncomingMessage & { complete: boolean };
  r.headers = { 'content-length': String(bytes.length), ...headers };
  r.on('end', () => (r.complete = true));
  return r;
}

const code = (p: Promise<unknown>) => p.then(() => 'read', (e: { code?: string; status?: number }) => `${e.status} ${e.code}`);

describe('model-input JSON bodies', () => {
  it('reads an object, UTF-8 split across chunks and a BOM included, as JSON.parse reads it', async () => {
    const value = { messages: [{ role: 'user', content: 'héllo wörld ✓ 𝄞 ' + 'x'.repeat(300_000) }], n: 1 };
    expect(await readModelJson(request(`\ufeff ${JSON.stringify(value)}`), 1 << 20)).toEqual(value);
    expect(await readModelJson(request('\n\t [1,2]'), 100)).toEqual([1, 2]);
    expect(await readModelJson(request(''), 100)).toEqual({});
  });

  it('refuses what koa-body refused: scalars, malformed text, __proto__ keys, deep nesting, bodies over the limit', async () => {
    expect(await code(readModelJson(request('"text"'), 100))).toBe('400 invalid_json');
    expect(await code(readModelJson(request('   '), 100))).toBe('400 invalid_json');
    expect(await code(readModelJson(request('{"a":'), 100))).toBe('400 invalid_json');
    expect(await code(readModelJson(request('{"a":{"__proto__":{"admin":true}}}'), 100))).toBe('400 invalid_json');
    expect(await code(readModelJson(request('{"a":{"\\u005f_proto__":{}}}'), 100))).toBe('400 invalid_json');
    const deep = '['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1);
    expect(await code(readModelJson(request(deep), 10_000))).toBe('400 invalid_json');
    expect(await readModelJson(request('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH)), 10_000)).toBeDefined();
    expect(await code(readModelJson(request('{"a":"' + 'x'.repeat(200) + '"}'), 100))).toBe('413 payload_too_large');
    // Declared too large: refused before reading; chunked past the limit: refused while reading.
    expect(await code(readModelJson(request('{}', 7, { 'content-length': '1000' }), 100))).toBe('413 payload_too_large');
    const chunked = request('{"a":"' + 'x'.repeat(200) + '"}');
    delete chunked.headers['content-length'];
    expect(await code(readModelJson(chunked, 100))).toBe('413 payload_too_large');
  });

  it('decodes ASCII and non-ASCII bytes as UTF-8', () => {
    for (const s of ['plain ascii {"a":1}', 'héllo ✓ 𝄞', '\u0000\u007f', '']) expect(decodeUtf8(Buffer.from(s))).toBe(s);
    expect(decodeUtf8(Buffer.from([0xff, 0x41]))).toBe(Buffer.from([0xff, 0x41]).toString('utf8'));
  });
});
