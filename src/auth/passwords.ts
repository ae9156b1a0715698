/**
 * Password hashing: Argon2id with the OWASP Password Storage Cheat Sheet's first configuration
 * (m = 19 MiB, t = 2, p = 1), stored as a PHC string (parameters and salt travel with the hash).
 */
import { hash, verify, type Algorithm } from '@node-rs/argon2';

// Algorithm is a `const enum` in the package's types, which isolated-module compilers cannot inline.
const ARGON2ID = 2 as Algorithm;
export const ARGON2_PARAMS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const MIN_PASSWORD_LENGTH = 12;

export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2_PARAMS);
}

export async function verifyPassword(phc: string, password: string): Promise<boolean> {
  try {
    return await verify(phc, password);
  } catch {
    return false;
  }
}

/** A hash to verify against when the e-mail is unknown, so both paths cost one Argon2 run. */
let decoy: Promise<string> | null = null;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword('tollgate-decoy-password-never-matches');
  return decoy;
}
