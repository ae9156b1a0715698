import { storableParam, storableText } from '../../../src/db/text-safety';

describe('storable text (what PostgreSQL text and jsonb refuse becomes U+FFFD)', () => {
  it('replaces raw NUL characters', () => {
    expect(storableText('hi \u0000 there')).toBe('hi \uFFFD there');
  });

  it('replaces the JSON escape of NUL, but not an escaped backslash followed by u0000', () => {
    expect(storableText(JSON.stringify({ p: 'hi \u0000 there' }))).toBe('{"p":"hi \\ufffd there"}');
    expect(JSON.parse(storableText(JSON.stringify({ p: 'hi \u0000' })))).toEqual({ p: 'hi \uFFFD' });
    const literal = JSON.stringify({ p: 'a literal \\u0000 typed by a user' }); // "\\u0000" in JSON text
    expect(storableText(literal)).toBe(literal);
    expect(JSON.parse(storableText(literal)).p).toBe('a literal \\u0000 typed by a user');
  });

  it('replaces lone surrogate escapes and keeps valid pairs', () => {
    const lone = JSON.stringify({ hi: '\ud800x', lo: 'y\udc00', pair: '😀' });
    const out = JSON.parse(storableText(lone));
    expect(out).toEqual({ hi: '\uFFFDx', lo: 'y\uFFFD', pair: '😀' });
    const escapedPair = '{"p":"\\ud83d\\ude00"}';
    expect(storableText(escapedPair)).toBe(escapedPair);
    expect(JSON.parse(storableText('{"p":"\\ud83d\\ud83d\\ude00"}')).p).toBe('\uFFFD😀');
  });

  it('leaves ordinary text untouched (same string)', () => {
    const s = JSON.stringify({ a: 'plain', b: [1, 2, 'x\\y'] });
    expect(storableText(s)).toBe(s);
  });

  it('parameters: strings, arrays of strings, and objects (JSON-encoded)', () => {
    expect(storableParam(['a\u0000', 'b'])).toEqual(['a\uFFFD', 'b']);
    expect(storableParam(['a', 'b', 'c\u0000'])).toEqual(['a', 'b', 'c\uFFFD']);
    const clean = [1, 2, 'x', null];
    expect(storableParam(clean)).toBe(clean); // nothing to change: the same array, not a copy
    expect(storableParam({ m: 'x\u0000' })).toBe('{"m":"x\\ufffd"}');
    expect(storableParam(5)).toBe(5);
    const d = new Date();
    expect(storableParam(d)).toBe(d);
    const b = Buffer.from('\u0000');
    expect(storableParam(b)).toBe(b);
  });
});
