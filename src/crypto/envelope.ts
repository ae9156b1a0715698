/**
 * Envelope encryption of project provider keys: each secret gets a random 256-bit data key
 * (AES-256-GCM, 96-bit nonce); the data key is wrapped by a key-encryption key (KEK, AES-256-GCM)
 * named by a key id, so a KEK rotation re-wraps data keys without touching secrets. The project
 * and provider are bound as associated data of both layers (a row copied to another project or
 * provider does not open), and decryption insists on the full 16-byte tag.
 *
 * Sealed parts are `nonce(12) ‖ ciphertext ‖ tag(16)`.
 *
 * KEKs: PROVIDER_KEY_KEKS=`<kid>:<base64 32 bytes>,…` (first one encrypts); else HKDF of
 * TOLLGATE_MASTER_KEY (kid `master-v1`); else, outside production, a generated key kept in
 * local_secret_keys (kid `local-v1`).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { Queryable } from '../db/pool';
import { loadOrCreateLocalKey } from '../db/repositories/local-secret-keys';

const NONCE = 12;
const TAG = 16;

export interface Keyring {
  /** The KEK new data keys are wrapped with. */
  activeKid: string;
  keys: Map<string, Buffer>;
}

export interface SealedSecret {
  kekId: string;
  wrappedKey: Buffer;
  ciphertext: Buffer;
}

export class EnvelopeKeyMissingError extends Error {
  constructor(kid: string) {
    super(`key-encryption key ${kid} is not configured (PROVIDER_KEY_KEKS)`);
    this.name = 'EnvelopeKeyMissingError';
  }
}

function gcmSeal(key: Buffer, plaintext: Buffer, aad: Buffer): Buffer {
  const nonce = randomBytes(NONCE);
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG });
  cipher.setAAD(aad);
  const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([nonce, ct, cipher.getAuthTag()]);
}

function gcmOpen(key: Buffer, sealed: Buffer, aad: Buffer): Buffer {
  if (sealed.length < NONCE + TAG) throw new Error('sealed value too short');
  const nonce = sealed.subarray(0, NONCE);
  const tag = sealed.subarray(sealed.length - TAG);
  // authTagLength pins the tag size: a truncated tag is refused instead of checked on fewer bits.
  const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG });
  decipher.setAAD(aad);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(sealed.subarray(NONCE, sealed.length - TAG)), decipher.final()]);
}

const secretAad = (context: string) => Buffer.from(`tollgate/provider-key/v1|${context}`, 'utf8');
const wrapAad = (context: string, kid: string) => Buffer.from(`tollgate/provider-key-wrap/v1|${kid}|${context}`, 'utf8');

/** Associated data of a project's provider key. */
export function providerKeyContext(projectId: string, provider: string): string {
  return `${projectId}|${provider}`;
}

export function sealSecret(ring: Keyring, plaintext: string, context: string): SealedSecret {
  const kek = ring.keys.get(ring.activeKid);
  if (!kek) throw new EnvelopeKeyMissingError(ring.activeKid);
  const dataKey = randomBytes(32);
  try {
    return {
      kekId: ring.activeKid,
      ciphertext: gcmSeal(dataKey, Buffer.from(plaintext, 'utf8'), secretAad(context)),
      wrappedKey: gcmSeal(kek, dataKey, wrapAad(context, ring.activeKid)),
    };
  } finally {
    dataKey.fill(0);
  }
}

export function openSecret(ring: Keyring, sealed: SealedSecret, context: string): string {
  const kek = ring.keys.get(sealed.kekId);
  if (!kek) throw new EnvelopeKeyMissingError(sealed.kekId);
  const dataKey = gcmOpen(kek, sealed.wrappedKey, wrapAad(context, sealed.kekId));
  try {
    return gcmOpen(dataKey, sealed.ciphertext, secretAad(context)).toString('utf8');
  } finally {
    dataKey.fill(0);
  }
}

/** The data key re-wrapped under the active KEK (the secret's ciphertext is unchanged). */
export function rewrapSecret(ring: Keyring, sealed: SealedSecret, context: string): SealedSecret {
  const oldKek = ring.keys.get(sealed.kekId);
  if (!oldKek) throw new EnvelopeKeyMissingError(sealed.kekId);
  const newKek = ring.keys.get(ring.activeKid);
  if (!newKek) throw new EnvelopeKeyMissingError(ring.activeKid);
  const dataKey = gcmOpen(oldKek, sealed.wrappedKey, wrapAad(context, sealed.kekId));
  try {
    return { kekId: ring.activeKid, ciphertext: sealed.ciphertext, wrappedKey: gcmSeal(newKek, dataKey, wrapAad(context, ring.activeKid)) };
  } finally {
    dataKey.fill(0);
  }
}

/** Parses `kid:base64,kid:base64` (first is active). */
export function parseKeks(spec: string): Keyring {
  const keys = new Map<string, Buffer>();
  let activeKid = '';
  for (const part of spec.split(',').map((p) => p.trim()).filter(Boolean)) {
    const i = part.indexOf(':');
    const kid = i > 0 ? part.slice(0, i) : '';
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(kid)) throw new Error('PROVIDER_KEY_KEKS: each entry is <key id>:<32 bytes base64>');
    const key = Buffer.from(part.slice(i + 1), 'base64');
    if (key.length !== 32) throw new Error(`PROVIDER_KEY_KEKS: key ${kid} must be 32 bytes encoded as base64`);
    if (keys.has(kid)) throw new Error(`PROVIDER_KEY_KEKS: key id ${kid} appears twice`);
    keys.set(kid, key);
    activeKid ||= kid;
  }
  if (!activeKid) throw new Error('PROVIDER_KEY_KEKS is empty');
  return { activeKid, keys };
}

/** The process's keyring from configuration (see the module comment). */
export async function loadKeyring(db: Queryable, config: { env: string; masterKey?: string; providerKeyKeks?: string }): Promise<Keyring> {
  if (config.providerKeyKeks) return parseKeks(config.providerKeyKeks);
  if (config.masterKey) {
    const kek = Buffer.from(hkdfSync('sha256', Buffer.from(config.masterKey, 'base64'), 'tollgate', 'provider-key-kek/v1', 32));
    return { activeKid: 'master-v1', keys: new Map([['master-v1', kek]]) };
  }
  if (config.env === 'production') throw new Error('Set PROVIDER_KEY_KEKS or TOLLGATE_MASTER_KEY: provider keys cannot be encrypted at rest in production');
  const key = await loadOrCreateLocalKey(db, 'provider_key_kek', () => randomBytes(32));
  return { activeKid: 'local-v1', keys: new Map([['local-v1', key]]) };
}
