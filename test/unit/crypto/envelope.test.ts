import { randomBytes } from 'node:crypto';
import { openSecret, parseKeks, providerKeyContext, rewrapSecret, sealSecret } from '../../../src/crypto/envelope';

const k1 = randomBytes(32).toString('base64');
const k2 = randomBytes(32).toString('base64');

describe('envelope encryption of provider keys', () => {
  const ring = parseKeks(`a:${k1}`);
  const ctx = providerKeyContext('proj_1', 'openai');

  it('round-trips, with a fresh data key and nonce per secret, and no plaintext in the sealed parts', () => {
    const a = sealSecret(ring, 'sk-live-abcdef123456', ctx);
    const b = sealSecret(ring, 'sk-live-abcdef123456', ctx);
    expect(openSecret(ring, a, ctx)).toBe('sk-live-abcdef123456');
    expect(a.kekId).toBe('a');
    expect(a.ciphertext.equals(b.ciphertext)).toBe(false);
    expect(a.wrappedKey.equals(b.wrappedKey)).toBe(false);
    expect(Buffer.concat([a.ciphertext, a.wrappedKey]).includes(Buffer.from('abcdef123456'))).toBe(false);
  });

  it('binds project and provider: a sealed key does not open for another project or provider', () => {
    const s = sealSecret(ring, 'sk-project-key-0001', ctx);
    expect(() => openSecret(ring, s, providerKeyContext('proj_2', 'openai'))).toThrow();
    expect(() => openSecret(ring, s, providerKeyContext('proj_1', 'mistral'))).toThrow();
  });

  it('refuses a truncated or altered tag and an altered ciphertext', () => {
    const s = sealSecret(ring, 'sk-project-key-0002', ctx);
    const truncated = { ...s, ciphertext: s.ciphertext.subarray(0, s.ciphertext.length - 4) };
    expect(() => openSecret(ring, truncated, ctx)).toThrow();
    const flipped = Buffer.from(s.ciphertext);
    flipped[flipped.length - 1] ^= 1;
    expect(() => openSecret(ring, { ...s, ciphertext: flipped }, ctx)).toThrow();
    const body = Buffer.from(s.ciphertext);
    body[13] ^= 1;
    expect(() => openSecret(ring, { ...s, ciphertext: body }, ctx)).toThrow();
  });

  it('re-wraps the data key under the active KEK; the secret ciphertext is unchanged and opens without the old KEK', () => {
    const s = sealSecret(ring, 'sk-project-key-0003', ctx);
    const both = parseKeks(`b:${k2},a:${k1}`);
    const moved = rewrapSecret(both, s, ctx);
    expect(moved.kekId).toBe('b');
    expect(moved.ciphertext.equals(s.ciphertext)).toBe(true);
    expect(openSecret(parseKeks(`b:${k2}`), moved, ctx)).toBe('sk-project-key-0003');
    expect(() => openSecret(parseKeks(`b:${k2}`), s, ctx)).toThrow(/key-encryption key a is not configured/);
  });

  it('rejects malformed KEK configuration', () => {
    expect(() => parseKeks('nokey')).toThrow();
    expect(() => parseKeks(`a:${randomBytes(16).toString('base64')}`)).toThrow(/32 bytes/);
    expect(() => parseKeks(`a:${k1},a:${k2}`)).toThrow(/twice/);
  });
});
