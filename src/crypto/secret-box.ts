/**
 * Secrets at rest (webhook signing secrets; provider keys may use it too): AES-256-GCM with a
 * random 96-bit nonce per value. The sealed form is `v1.<nonce b64url>.<ciphertext b64url>.<tag b64url>`;
 * `purpose` is bound as additional authenticated data, so a value sealed for one purpose (or one
 * row, when the caller includes its id) does not open as another.
 *
 * Key: HKDF-SHA256(TOLLGATE_MASTER_KEY, salt "tollgate", info "secret-box/v1"). Without a master
 * key, development and test processes generate a 32-byte key once and keep it in
 * `local_secret_keys` (so every process of one database agrees); production refuses to seal or
 * open anything (`SecretBoxUnavailableError`): set TOLLGATE_MASTER_KEY.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { Queryable } from '../db/pool';
import { loadOrCreateLocalKey } from '../db/repositories/local-secret-keys';

export interface SecretBox {
  seal(plaintext: string, purpose: string): string;
  open(sealed: string, purpose: string): string;
}

export class SecretBoxUnavailableError extends Error {
  constructor() {
    super('TOLLGATE_MASTER_KEY is not set: secrets cannot be encrypted at rest in production');
    this.name = 'SecretBoxUnavailableError';
  }
}

const VERSION = 'v1';

export function secretBoxFromKey(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('secret box key must be 32 bytes');
  return {
    seal(plaintext, purpose) {
      const nonce = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, nonce);
      cipher.setAAD(Buffer.from(purpose, 'utf8'));
      const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [VERSION, nonce.toString('base64url'), ct.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
    },
    open(sealed, purpose) {
      const [v, nonce, ct, tag] = sealed.split('.');
      if (v !== VERSION || nonce === undefined || ct === undefined || tag === undefined) throw new Error('not a sealed secret');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(nonce, 'base64url'));
      decipher.setAAD(Buffer.from(purpose, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}

export function keyFromMasterKey(masterKeyB64: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(masterKeyB64, 'base64'), 'tollgate', 'secret-box/v1', 32));
}

const cache = new Map<string, Promise<SecretBox>>();

/** The process's secret box (memoized per master key / database). */
export function secretBox(db: Queryable, config: { env: string; masterKey?: string; databaseUrl: string }): Promise<SecretBox> {
  if (config.masterKey) {
    const k = `mk:${config.masterKey}`;
    let p = cache.get(k);
    if (!p) {
      p = Promise.resolve(secretBoxFromKey(keyFromMasterKey(config.masterKey)));
      cache.set(k, p);
    }
    return p;
  }
  if (config.env === 'production') return Promise.reject(new SecretBoxUnavailableError());
  const k = `db:${config.databaseUrl}`;
  let p = cache.get(k);
  if (!p) {
    p = loadOrCreateLocalKey(db, 'secret_box', () => randomBytes(32)).then(secretBoxFromKey);
    p.catch(() => cache.delete(k));
    cache.set(k, p);
  }
  return p;
}
