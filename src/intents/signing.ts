import { findSigningKey, insertSigningKeyIfAbsent } from '../db/repositories/integrity-keys';
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, hkdfSync, KeyObject, sign, verify } from 'node:crypto';
import type { Queryable } from '../db/pool';

/**
 * Ed25519 signing key for integrity signatures (workflow declarations and amendments).
 *
 * - With TOLLGATE_MASTER_KEY: the 32-byte seed is HKDF-SHA256(master key, salt "tollgate",
 *   info "integrity/permit-binding/ed25519/v1"), so every process derives the same key and nothing
 *   is stored.
 * - Without it: a key pair is generated once and stored in `integrity_keys` (purpose
 *   `permit_binding`); the first process to insert wins, every other process loads that row.
 *
 * The private key is never returned by any route or written to a log.
 */
export interface IntegritySigner {
  kid: string;
  algorithm: 'Ed25519';
  publicKey: KeyObject;
  /** Raw 32-byte public key, base64. */
  publicKeyB64: string;
  publicKeyPem: string;
  source: 'derived_from_master_key' | 'stored';
  createdAt: string | null;
  signB64(message: string): string;
}

export const SIGNING_PURPOSE = 'permit_binding';
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

function rawPublicKey(pub: KeyObject): Buffer {
  const der = pub.export({ format: 'der', type: 'spki' });
  return der.subarray(der.length - 32);
}

function kidOf(pub: KeyObject): string {
  return `ed25519_${createHash('sha256').update(rawPublicKey(pub)).digest('hex').slice(0, 16)}`;
}

function makeSigner(privateKey: KeyObject, source: IntegritySigner['source'], createdAt: string | null): IntegritySigner {
  const publicKey = createPublicKey(privateKey);
  return {
    kid: kidOf(publicKey),
    algorithm: 'Ed25519',
    publicKey,
    publicKeyB64: rawPublicKey(publicKey).toString('base64'),
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    source,
    createdAt,
    signB64: (message) => sign(null, Buffer.from(message, 'utf8'), privateKey).toString('base64'),
  };
}

export function signerFromMasterKey(masterKeyB64: string): IntegritySigner {
  const seed = Buffer.from(hkdfSync('sha256', Buffer.from(masterKeyB64, 'base64'), 'tollgate', 'integrity/permit-binding/ed25519/v1', 32));
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  return makeSigner(privateKey, 'derived_from_master_key', null);
}

async function loadOrCreateStored(db: Queryable): Promise<IntegritySigner> {
  let stored = await findSigningKey(db, SIGNING_PURPOSE);
  if (!stored) {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    await insertSigningKeyIfAbsent(db, {
      kid: kidOf(publicKey),
      purpose: SIGNING_PURPOSE,
      publicKeyDer: publicKey.export({ format: 'der', type: 'spki' }),
      privateKeyDer: privateKey.export({ format: 'der', type: 'pkcs8' }),
    });
    stored = (await findSigningKey(db, SIGNING_PURPOSE))!;
  }
  const privateKey = createPrivateKey({ key: stored.private_key_der, format: 'der', type: 'pkcs8' });
  return makeSigner(privateKey, 'stored', stored.created_at.toISOString());
}

const cache = new Map<string, Promise<IntegritySigner>>();

/** The process's signer; memoized per master key / database. */
export function integritySigner(db: Queryable, config: { masterKey?: string; databaseUrl: string }): Promise<IntegritySigner> {
  const cacheKey = config.masterKey ? `mk:${createHash('sha256').update(config.masterKey).digest('hex')}` : `db:${config.databaseUrl}`;
  let p = cache.get(cacheKey);
  if (!p) {
    p = config.masterKey ? Promise.resolve(signerFromMasterKey(config.masterKey)) : loadOrCreateStored(db);
    p.catch(() => cache.delete(cacheKey));
    cache.set(cacheKey, p);
  }
  return p;
}

/** Verifies a base64 Ed25519 signature over `message` with a raw base64 public key. */
export function verifySignatureB64(publicKeyB64: string, message: string, signatureB64: string): boolean {
  const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(publicKeyB64, 'base64')]);
  const key = createPublicKey({ key: spki, format: 'der', type: 'spki' });
  return verify(null, Buffer.from(message, 'utf8'), key, Buffer.from(signatureB64, 'base64'));
}
