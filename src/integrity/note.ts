/**
 * C2SP signed notes (https://c2sp.org/signed-note) with Ed25519 keys, and C2SP tlog-checkpoint
 * bodies (https://c2sp.org/tlog-checkpoint). Byte-compatible with golang.org/x/mod/sumdb/note:
 *
 *   key hash  = first 4 bytes (big-endian uint32) of SHA-256(name || "\n" || 0x01 || pubkey32)
 *   vkey      = <name>+<key hash, 8 hex digits>+<base64(0x01 || pubkey32)>
 *   note      = text (ends with "\n") || "\n" || one line per signature:
 *               "— " (U+2014, space) <name> " " base64(key hash (4 bytes) || Ed25519 signature of text) "\n"
 *
 * Pure node:crypto; the offline verifier uses it.
 */
import { createHash, createPublicKey, KeyObject, sign, verify } from 'node:crypto';

export const ED25519_ALG = 0x01;
const SIG_PREFIX = '— ';
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export function isValidKeyName(name: string): boolean {
  return name.length > 0 && !/[\s+]/u.test(name);
}

export function noteKeyHash(name: string, publicKey32: Buffer): number {
  const h = createHash('sha256').update(name, 'utf8').update('\n').update(Buffer.from([ED25519_ALG])).update(publicKey32).digest();
  return h.readUInt32BE(0);
}

export function verifierKey(name: string, publicKey32: Buffer): string {
  if (!isValidKeyName(name)) throw new Error(`invalid note key name ${JSON.stringify(name)}`);
  const hash = noteKeyHash(name, publicKey32).toString(16).padStart(8, '0');
  return `${name}+${hash}+${Buffer.concat([Buffer.from([ED25519_ALG]), publicKey32]).toString('base64')}`;
}

export interface NoteVerifier {
  name: string;
  keyHash: number;
  publicKey: KeyObject;
  vkey: string;
}

/** Parses a `name+hash+base64` verifier key; throws on anything malformed or a hash that does not match. */
export function parseVerifierKey(vkey: string): NoteVerifier {
  const trimmed = vkey.trim();
  const m = /^([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/=]+)$/.exec(trimmed);
  if (!m) throw new Error('malformed note verifier key (expected <name>+<8 hex digits>+<base64>)');
  const [, name, hashHex, b64] = m;
  const raw = Buffer.from(b64, 'base64');
  if (raw.length !== 33 || raw[0] !== ED25519_ALG) throw new Error('note verifier key is not an Ed25519 key');
  const pub = raw.subarray(1);
  const keyHash = noteKeyHash(name, pub);
  if (keyHash !== parseInt(hashHex, 16)) throw new Error('note verifier key hash does not match its name and key');
  const publicKey = createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, pub]), format: 'der', type: 'spki' });
  return { name, keyHash, publicKey, vkey: trimmed };
}

function checkText(text: string): void {
  if (!text.endsWith('\n')) throw new Error('note text must end with a newline');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0009\u000b-\u001f]/u.test(text)) throw new Error('note text must not contain control characters other than newline');
}

/** Signs `text` as a signed note with one Ed25519 key. */
export function signNote(text: string, name: string, privateKey: KeyObject, publicKey32: Buffer): string {
  checkText(text);
  if (!isValidKeyName(name)) throw new Error(`invalid note key name ${JSON.stringify(name)}`);
  const hash = Buffer.alloc(4);
  hash.writeUInt32BE(noteKeyHash(name, publicKey32));
  const sig = sign(null, Buffer.from(text, 'utf8'), privateKey);
  return `${text}\n${SIG_PREFIX}${name} ${Buffer.concat([hash, sig]).toString('base64')}\n`;
}

export type OpenResult = { ok: true; text: string } | { ok: false; error: string };

/** Opens a signed note: ok when it is well formed and carries a valid signature by `verifier`. */
export function openNote(note: string, verifier: NoteVerifier): OpenResult {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0009\u000b-\u001f]/u.test(note)) return { ok: false, error: 'malformed note: control characters' };
  const split = note.lastIndexOf('\n\n');
  if (split < 0) return { ok: false, error: 'malformed note: no signature block' };
  const text = note.slice(0, split + 1);
  const sigs = note.slice(split + 2);
  if (sigs.length === 0 || !sigs.endsWith('\n')) return { ok: false, error: 'malformed note: signature block' };
  let sawOurs = false;
  for (const line of sigs.slice(0, -1).split('\n')) {
    if (!line.startsWith(SIG_PREFIX)) return { ok: false, error: 'malformed note: signature line' };
    const rest = line.slice(SIG_PREFIX.length);
    const sp = rest.indexOf(' ');
    const name = sp < 0 ? rest : rest.slice(0, sp);
    const raw = Buffer.from(sp < 0 ? '' : rest.slice(sp + 1), 'base64');
    if (raw.length < 5) return { ok: false, error: 'malformed note: signature' };
    if (name !== verifier.name || raw.readUInt32BE(0) !== verifier.keyHash) continue;
    sawOurs = true;
    if (!verify(null, Buffer.from(text, 'utf8'), verifier.publicKey, raw.subarray(4))) {
      return { ok: false, error: `invalid signature by ${verifier.name}+${verifier.keyHash.toString(16).padStart(8, '0')}` };
    }
  }
  if (!sawOurs) return { ok: false, error: `no signature by the key ${verifier.name}+${verifier.keyHash.toString(16).padStart(8, '0')}` };
  return { ok: true, text };
}

export interface Checkpoint {
  origin: string;
  size: number;
  root: Buffer;
  extensions: string[];
}

/** The C2SP tlog-checkpoint body: origin, decimal size, base64 root hash, optional extension lines. */
export function checkpointText(c: Checkpoint): string {
  if (!c.origin || c.origin.includes('\n')) throw new Error('invalid checkpoint origin');
  return [c.origin, String(c.size), c.root.toString('base64'), ...c.extensions].join('\n') + '\n';
}

export function parseCheckpointText(text: string): Checkpoint {
  const lines = text.split('\n');
  if (lines.length < 4 || lines[lines.length - 1] !== '') throw new Error('checkpoint body must have at least three lines');
  const [origin, sizeLine, rootLine, ...rest] = lines;
  if (!/^(0|[1-9][0-9]*)$/.test(sizeLine)) throw new Error('checkpoint size is not a decimal number');
  const root = Buffer.from(rootLine, 'base64');
  if (root.length !== 32 || root.toString('base64') !== rootLine) throw new Error('checkpoint root is not a base64 SHA-256 hash');
  return { origin, size: Number(sizeLine), root, extensions: rest.slice(0, -1) };
}
