/**
 * The token estimator (src/pricing/tokenizer.ts) against js-tiktoken's exact o200k_base encoder.
 *
 * Budgets rely on the estimate never being below the real count, so the contract checked here is
 * countTokens(text) ≥ js-tiktoken's count on a varied generated corpus. The current encoder is exact
 * (same pieces, same merges), so it also checks equality — and the token ids themselves — which is
 * what keeps the over-estimate ratio at 1.0. Timing is not asserted here: see bench/units/tokenizer.ts.
 */
import { Tiktoken, type TiktokenBPE } from 'js-tiktoken/lite';
import {
  EXACT_COUNT_MAX_CHARS,
  CHAT_MESSAGE_OVERHEAD_TOKENS,
  TOKENIZER_NAME,
  countChatTokens,
  countTokens,
  encodeTokens,
  truncateToTokens,
} from '../../../src/pricing/tokenizer';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const ranksModule = require('js-tiktoken/ranks/o200k_base') as TiktokenBPE & { default?: TiktokenBPE };
const reference = new Tiktoken(ranksModule.default ?? ranksModule);
const exactIds = (text: string): number[] => reference.encode(text, [], []);
const exactCount = (text: string): number => exactIds(text).length;

// ---------------------------------------------------------------------------------------------
// A deterministic generated corpus.

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rnd = prng(20251123);
const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
const times = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));
const fromRange = (lo: number, hi: number, n: number) => times(n, () => String.fromCodePoint(int(lo, hi))).join('');

const WORDS = (
  'the of and to in is you that it he was for on are as with his they at be this have from or one had by ' +
  'word but not what all were we when your can said there use an each which she do how their if will up ' +
  'other about out many then them these so some her would make like him into time has look two more write ' +
  'go see number no way could people my than first water been call who oil its now find long down day did ' +
  'get come made may part budget gateway request provider latency throughput tokenizer estimate invoice ' +
  'reconciliation idempotency observability authorization deterministic extraordinarily'
).split(' ');
const CONTRACTIONS = ["don't", "it's", "we'll", "they're", "I've", "she'd", "I'm", "DON'T", "WE'LL", "can't"];

function prose(): string {
  return times(int(2, 8), () => {
    const words = times(int(4, 18), () => (rnd() < 0.08 ? pick(CONTRACTIONS) : pick(WORDS)));
    words[0] = words[0][0].toUpperCase() + words[0].slice(1);
    if (rnd() < 0.3) words.splice(int(1, words.length - 1), 0, String(int(0, 99_999)));
    if (rnd() < 0.2) words.splice(int(1, words.length - 1), 0, `"${pick(WORDS)}"`);
    if (rnd() < 0.1) words.splice(int(1, words.length - 1), 0, pick(WORDS).toUpperCase());
    return words.join(rnd() < 0.9 ? ' ' : ', ') + pick(['.', '.', '!', '?', ';', ' —', '...']);
  }).join(pick([' ', '  ', '\n', '\n\n']));
}

function identifier(): string {
  const parts = times(int(1, 3), () => pick(WORDS));
  return rnd() < 0.5 ? parts.map((p, i) => (i ? p[0].toUpperCase() + p.slice(1) : p)).join('') : parts.join('_');
}

function code(): string {
  const indent = pick(['  ', '    ', '\t']);
  const lines: string[] = [];
  for (let i = 0; i < int(3, 12); i++) {
    const depth = int(0, 3);
    const line = pick([
      () => `const ${identifier()} = ${identifier()}(${identifier()}, ${int(0, 999)});`,
      () => `if (${identifier()} >= ${int(0, 99)} && !${identifier()}) {`,
      () => `return ${identifier()}.${identifier()}?.map((x) => x * ${int(1, 9)}) ?? [];`,
      () => `// ${prose().split('\n')[0].slice(0, 60)}`,
      () => `def ${identifier()}(self, ${identifier()}: int = ${int(0, 9)}) -> dict[str, Any]:`,
      () => `    raise ValueError(f"bad {${identifier()}!r}")`,
      () => `}`,
      () => `SELECT ${identifier()}, COUNT(*) FROM ${identifier()} WHERE id = $${int(1, 9)} GROUP BY 1;`,
      () => `#include <${identifier()}.h>`,
      () => `x${int(0, 9)} = 0x${int(0, 0xffffff).toString(16)}; y <<= ${int(1, 31)}; z = a[i++] + b[--j];`,
    ])();
    lines.push(indent.repeat(depth) + line);
  }
  return lines.join(rnd() < 0.9 ? '\n' : '\r\n') + '\n';
}

function jsonValue(depth: number): unknown {
  const r = rnd();
  if (depth > 2 || r < 0.3) return pick([int(-1000, 100_000), rnd() * 1000, pick(WORDS), true, null, prose().slice(0, 40)]);
  if (r < 0.6) return times(int(0, 4), () => jsonValue(depth + 1));
  return Object.fromEntries(times(int(1, 5), () => [identifier(), jsonValue(depth + 1)]));
}
const json = () => JSON.stringify(jsonValue(0), null, pick([undefined, 2, '\t']));

function cjk(): string {
  return times(int(2, 10), () =>
    pick([
      () => fromRange(0x4e00, 0x9fff, int(2, 20)), // Chinese
      () => fromRange(0x3040, 0x309f, int(2, 12)) + fromRange(0x4e00, 0x9fff, int(1, 4)), // hiragana + kanji
      () => fromRange(0x30a0, 0x30ff, int(2, 10)), // katakana
      () => times(int(1, 5), () => fromRange(0xac00, 0xd7a3, int(1, 5))).join(' '), // Hangul
      () => '中文文本，测试。日本語のテキストです。한국어 텍스트입니다.',
    ])() + pick(['，', '。', '、', '！', '？', '「', '」', ' ', '']),
  ).join('');
}

const EMOJI = ['😀', '👍🏽', '👨‍👩‍👧‍👦', '🇺🇸', '🇯🇵', '1️⃣', '❤️', '✨', '🚀', '🧑🏿‍💻', '🏳️‍🌈', '©', '™', '→', '∑', '≠'];
const emoji = () => times(int(3, 30), () => (rnd() < 0.6 ? pick(EMOJI) : ` ${pick(WORDS)}`)).join(pick(['', ' ']));

function base64(): string {
  return Buffer.from(times(int(30, 3000), () => int(0, 255))).toString(pick(['base64', 'base64url']) as BufferEncoding);
}

function url(): string {
  const path = times(int(1, 5), () => pick([identifier(), String(int(0, 99_999)), '%E4%B8%AD', 'v1'])).join('/');
  const query = times(int(0, 4), () => `${identifier()}=${pick([int(0, 999), identifier(), base64().slice(0, 12)])}`).join('&');
  return `${pick(['https', 'http', 'ftp'])}://${pick(['www.', 'api.', ''])}${identifier()}.${pick(['com', 'io', 'co.uk'])}/${path}${query ? `?${query}` : ''}${rnd() < 0.3 ? '#frag' : ''}`;
}

const whitespace = () => times(int(2, 20), () => pick([' ', '  ', '\t', '\n', '\r\n', '\u00a0', '\u3000', '     \n', pick(WORDS)])).join('');

function mixedScripts(): string {
  return times(int(3, 12), () =>
    pick([
      () => fromRange(0x0410, 0x044f, int(2, 10)), // Cyrillic
      () => fromRange(0x03b1, 0x03c9, int(2, 10)), // Greek
      () => fromRange(0x0627, 0x064a, int(2, 10)), // Arabic
      () => fromRange(0x05d0, 0x05ea, int(2, 10)), // Hebrew
      () => fromRange(0x0915, 0x0939, int(2, 8)) + '\u094d', // Devanagari + virama
      () => fromRange(0x0e01, 0x0e2e, int(4, 30)), // Thai (no spaces)
      () => 'e\u0301a\u0308o\u0303 Ñandú ÇÉÎÕÜ straße ĳ ǅ', // combining marks, title case
      () => pick(WORDS),
      () => String(int(0, 999_999)) + '٣٤٥' + '０１２', // ASCII, Arabic-Indic and fullwidth digits
    ])(),
  ).join(pick([' ', '', '-', '\n']));
}

/** Random code points from every plane, lone surrogates and special-token text included. */
function unicodeFuzz(): string {
  return times(int(1, 40), () =>
    pick([
      () => String.fromCharCode(int(0, 0x7f)),
      () => String.fromCharCode(int(0x80, 0x7ff)),
      () => String.fromCharCode(int(0x800, 0xd7ff)),
      () => String.fromCharCode(int(0xd800, 0xdfff)), // lone surrogate
      () => String.fromCharCode(int(0xe000, 0xffff)),
      () => String.fromCodePoint(int(0x10000, 0x10ffff)),
      () => pick(['<|endoftext|>', '<|endofprompt|>', "'s", "'LL", '\u2028', '\ufeff', '\u0085', '\u200d']),
    ])(),
  ).join('');
}

/** Runs without word breaks: the input that made js-tiktoken quadratic (kept short enough for it here). */
const RUN_UNITS = ['a', 'A', 'z', '!', ' ', '\n', '\t', '0', '.', '=', '-', '中', 'é', '😀', 'ab', 'aB', ' a', 'Ab', '\r\n', 'ก'];
const RUN_LENGTHS = [2, 31, 32, 33, 64, 100, 129, 257, 600];
const runs = RUN_UNITS.flatMap((unit) => RUN_LENGTHS.map((n) => unit.repeat(Math.ceil(n / unit.length))));

const CORPUS: Record<string, string[]> = {
  prose: times(60, prose),
  code: times(60, code),
  json: times(40, json),
  cjk: times(40, cjk),
  emoji: times(30, emoji),
  runs: [...runs, 'a'.repeat(1500), ' '.repeat(1500), 'x'.repeat(40) + ' ' + 'y'.repeat(1200)],
  base64: times(30, base64),
  urls: times(40, url),
  whitespace: times(40, whitespace),
  mixedScripts: times(40, mixedScripts),
  unicodeFuzz: times(200, unicodeFuzz),
};

// ---------------------------------------------------------------------------------------------

describe('tokenizer', () => {
  it('is o200k_base', () => {
    expect(TOKENIZER_NAME).toBe('o200k_base');
  });

  it('counts ordinary strings exactly', () => {
    expect(countTokens('')).toBe(0);
    expect(countTokens('hello')).toBe(1);
    expect(countTokens('hello world')).toBe(2);
    expect(countTokens('Hello, world!')).toBe(4);
    expect(countTokens('The quick brown fox jumps over the lazy dog.')).toBe(10);
    expect(countTokens("I don't think we'll make it.")).toBe(7);
    expect(countTokens('function add(a, b) {\n  return a + b;\n}\n')).toBe(14);
    expect(countTokens('{"id": 123, "name": "widget"}')).toBe(12);
    expect(countTokens('日本語のテキスト')).toBe(6);
    expect(countTokens('😀👍🏽')).toBe(4);
    expect(countTokens('https://example.com/path?q=1')).toBe(8);
    expect(countTokens('<|endoftext|>')).toBe(7); // special-token text is ordinary text
    expect(countTokens('a'.repeat(1000))).toBe(125);
    expect(countTokens(' '.repeat(1000))).toBe(9);
  });

  it.each(Object.keys(CORPUS))('never counts fewer tokens than js-tiktoken (and matches it) on %s', (kind) => {
    let ours = 0;
    let exact = 0;
    for (const text of CORPUS[kind]) {
      const want = exactIds(text);
      const got = countTokens(text);
      if (got < want.length) throw new Error(`under-count on ${JSON.stringify(text.slice(0, 80))}: ${got} < ${want.length}`);
      expect({ text, count: got }).toEqual({ text, count: want.length });
      expect(encodeTokens(text)).toEqual(want);
      ours += got;
      exact += want.length;
    }
    expect(ours / exact).toBeLessThanOrEqual(1.1);
  });

  it('matches js-tiktoken on short random strings (the ASCII pre-tokenizer against the pattern)', () => {
    // Every character class the o200k pattern distinguishes, and the characters its rules hinge on.
    const alphabet = [
      'a', 'b', 'Z', 'Q', 's', 't', 'e', 'l', 'r', 'v', 'd', 'm', 'S', 'T', 'E', 'L', "'", '1', '2', ' ', ' ', '\t',
      '\n', '\r', '/', '.', '(', '\u000b', '\f', '\u0000', '\u001f', '\u007f', 'é', 'É', '中', '\u00a0', '\u3000',
      '\u0301', '٣', '😀', '\ud800', '\u2028', '\ufeff', '\u0085', '!', '-', '_', '$', 'ǅ', 'ʰ',
    ];
    const ascii = alphabet.filter((c) => c.charCodeAt(0) < 0x80);
    for (let k = 0; k < 20_000; k++) {
      const chars = k % 2 === 0 ? ascii : alphabet;
      const text = times(int(1, 14), () => pick(chars)).join('');
      const want = exactIds(text);
      if (countTokens(text) !== want.length || encodeTokens(text).join() !== want.join()) {
        expect({ text, ids: encodeTokens(text), count: countTokens(text) }).toEqual({ text, ids: want, count: want.length });
      }
    }
  });

  it('counts 100,000 repeated characters (without the quadratic merge)', () => {
    const MAX_TOKEN_BYTES = 128;
    for (const unit of ['a', ' ', '!', 'A', '中', '😀', 'ab']) {
      const text = unit.repeat(100_000 / unit.length);
      const bytes = Buffer.byteLength(text);
      const n = countTokens(text);
      expect(n).toBeGreaterThanOrEqual(Math.ceil(bytes / MAX_TOKEN_BYTES)); // every token is ≤ 128 bytes
      expect(n).toBeLessThanOrEqual(bytes); // every token is ≥ 1 byte
    }
    expect(countTokens('a'.repeat(100_000))).toBe(12_500); // 'aaaaaaaa' is a token: exact, not just bounded
    expect(countTokens('x '.repeat(50_000))).toBe(exactCount('x '.repeat(50_000))); // many short pieces
  });

  it('counts a long run in pieces of every size the same as js-tiktoken', () => {
    // The merge switches algorithm with the piece length; the two must agree around the switch.
    const sizes = [...times(80, (i) => i + 1), 100, 127, 128, 129, 150, 200];
    for (const n of sizes) {
      const lower = times(n, () => String.fromCharCode(int(97, 122))).join('');
      for (const text of ['a'.repeat(n), 'é'.repeat(n), fromRange(0x4e00, 0x9fff, n), lower, ` ${lower}`]) {
        expect({ text, count: countTokens(text) }).toEqual({ text, count: exactCount(text) });
      }
    }
  });

  it('counts chat messages with a per-message overhead', () => {
    expect(CHAT_MESSAGE_OVERHEAD_TOKENS).toBe(3);
    expect(countChatTokens([])).toBe(0);
    expect(countChatTokens(['hello world', '', 'Hello, world!'])).toBe(2 + 0 + 4 + 3 * CHAT_MESSAGE_OVERHEAD_TOKENS);
  });

  it('truncates to the decoded first n tokens, as js-tiktoken does', () => {
    const samples = [
      ...CORPUS.prose.slice(0, 10),
      ...CORPUS.code.slice(0, 5),
      ...CORPUS.cjk.slice(0, 5),
      ...CORPUS.emoji.slice(0, 5),
      ...CORPUS.unicodeFuzz.slice(0, 20),
      'a'.repeat(300),
      'Emulated reply 1a2b3c4d: you said "hello there". amber basalt cedar delta.',
    ];
    for (const text of samples) {
      const ids = exactIds(text);
      for (const n of [0, 1, 2, 3, 5, 8, 13, ids.length - 1, ids.length, ids.length + 1]) {
        if (n < 0) continue;
        const want = ids.length <= n ? text : reference.decode(ids.slice(0, n));
        expect({ text, n, out: truncateToTokens(text, n) }).toEqual({ text, n, out: want });
      }
    }
    expect(truncateToTokens('hello world', -1)).toBe('');
    expect(truncateToTokens('', 5)).toBe('');
  });

  it('truncates a 100,000-character run', () => {
    expect(truncateToTokens('a'.repeat(100_000), 10)).toBe('a'.repeat(80));
    expect(truncateToTokens('a'.repeat(100_000), 12_500)).toBe('a'.repeat(100_000));
    const text = `${'b'.repeat(100_000)} end`;
    const out = truncateToTokens(text, countTokens(text) - 2); // cut inside the run
    expect(text.startsWith(out)).toBe(true);
    expect(out.length).toBeGreaterThan(90_000);
    expect(out.length).toBeLessThan(100_000);
  });
  it('bounds a text over EXACT_COUNT_MAX_CHARS by its UTF-8 size instead of counting it', () => {
    const n = EXACT_COUNT_MAX_CHARS + 8;
    expect(countTokens('a'.repeat(n))).toBe(n); // >= the exact count (n / 8), never below it
    expect(countTokens('é'.repeat(n))).toBe(2 * n);
    expect(countTokens('a'.repeat(EXACT_COUNT_MAX_CHARS))).toBe(EXACT_COUNT_MAX_CHARS / 8);
  });
});
