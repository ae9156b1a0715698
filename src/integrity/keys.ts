/**
 * The compliance log's Ed25519 signing key: signs checkpoints (C2SP tlog-checkpoint notes) and
 * export manifests (signed notes whose first line differs, so neither can pass for the other).
 *
 * Generated on first use (the first worker's checkpoint round or the first key request), stored in
 * `compliance_signing_keys` with the private key sealed by the secret box (AES-256-GCM under
 * TOLLGATE_MASTER_KEY; a per-database local key in development and test), never logged, never
 * returned by a route. Rotation (`npm run cli -- integrity rotate-key`) closes the active key
 * (valid_until = now) and activates a new one; old keys stay listed so old checkpoints and
 * exports keep verifying. Every process reads the active key row at each signing round, so a
 * rotation takes effect everywhere within one round.
 */
import { createPrivateKey, generateKeyPairSync, KeyObject } from 'node:crypto';
import type { Config } from '../config';
import type { Db, Queryable } from '../db/pool';
import { secretBox } from '../crypto/secret-box';
import { findActiveComplianceKey, insertComplianceKeyIfNoneActive, rotateComplianceKey, type ComplianceKeyRow } from '../db/repositories/integrity-log';
import { withTransaction } from '../db/pool';
import { noteKeyHash, verifierKey } from './note';

export const COMPLIANCE_KEY_PURPOSE = 'compliance_log';
/** The signed-note key name of the compliance log key. */
export const COMPLIANCE_KEY_NAME = 'tollgate.compliance';

export interface ComplianceSigner {
  kid: string;
  keyName: string;
  publicKey32: Buffer;
  /** The note verifier key: `<name>+<hash>+<base64(0x01 || key)>`. */
  vkey: string;
  privateKey: KeyObject;
  validFrom: Date;
}

type KeyConfig = Pick<Config, 'env' | 'masterKey' | 'databaseUrl'>;

const sealPurpose = (kid: string) => `compliance-signing-key:${kid}`;

export function kidOf(name: string, publicKey32: Buffer): string {
  return `${name}+${noteKeyHash(name, publicKey32).toString(16).padStart(8, '0')}`;
}

async function newKeyRow(db: Queryable, config: KeyConfig) {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const spki = publicKey.export({ format: 'der', type: 'spki' });
  const pub = spki.subarray(spki.length - 32);
  const kid = kidOf(COMPLIANCE_KEY_NAME, pub);
  const box = await secretBox(db, config);
  const sealed = box.seal(privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'), sealPurpose(kid));
  return { kid, purpose: COMPLIANCE_KEY_PURPOSE, keyName: COMPLIANCE_KEY_NAME, publicKey: pub, privateKeySealed: sealed };
}

const opened = new Map<string, KeyObject>();

async function signerOf(db: Queryable, config: KeyConfig, row: ComplianceKeyRow): Promise<ComplianceSigner> {
  let privateKey = opened.get(row.kid);
  if (!privateKey) {
    const box = await secretBox(db, config);
    privateKey = createPrivateKey({ key: Buffer.from(box.open(row.private_key_sealed, sealPurpose(row.kid)), 'base64'), format: 'der', type: 'pkcs8' });
    opened.set(row.kid, privateKey);
  }
  return {
    kid: row.kid,
    keyName: row.key_name,
    publicKey32: row.public_key,
    vkey: verifierKey(row.key_name, row.public_key),
    privateKey,
    validFrom: row.valid_from,
  };
}

/** The active signer; creates the first key when there is none. */
export async function complianceSigner(db: Queryable, config: KeyConfig): Promise<ComplianceSigner> {
  let row = await findActiveComplianceKey(db, COMPLIANCE_KEY_PURPOSE);
  if (!row) {
    await insertComplianceKeyIfNoneActive(db, await newKeyRow(db, config));
    row = await findActiveComplianceKey(db, COMPLIANCE_KEY_PURPOSE);
    if (!row) throw new Error('compliance signing key could not be created');
  }
  return signerOf(db, config, row);
}

/** Retires the active key and activates a new one; returns the new key's id. */
export async function rotateComplianceSigner(db: Db, config: KeyConfig): Promise<{ kid: string; vkey: string }> {
  const row = await newKeyRow(db, config);
  await withTransaction(db, (c) => rotateComplianceKey(c, row));
  return { kid: row.kid, vkey: verifierKey(row.keyName, row.publicKey) };
}
