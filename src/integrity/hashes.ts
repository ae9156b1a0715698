/**
 * RFC 6962 (and RFC 9162 §2.1) hashes of the log: the leaf and node hashes the Merkle tree
 * (merkle.ts) is built from, and the event chain's link hash taken with a leaf's (`chainAndLeafHash`).
 *
 *   leaf hash  = SHA-256(0x00 || leaf bytes)
 *   node hash  = SHA-256(0x01 || left || right)
 *   MTH({})    = SHA-256("")
 */
import { hash } from 'node:crypto';

// One-shot hashing of the prefixed bytes: a checkpoint hashes two or three times per event, and
// createHash/update/digest cost ~1 µs more per hash than crypto.hash (docs/performance.md).

/**
 * SHA-256 of the bytes (a string as UTF-8) as a Buffer. The digest is taken as a 'binary' (latin1)
 * string, a byte per unit, and copied into a Buffer from the pool: a digest returned as a Buffer costs
 * twice as much, the binding allocating a buffer of its own for each. A tree of n leaves hashes
 * n − 1 nodes, and `integrity verify` every leaf as well.
 */
export function sha256(bytes: Uint8Array | string): Buffer {
  return Buffer.from(hash('sha256', bytes, 'binary'), 'latin1');
}

// A string leaf is hashed as '\u0000' + leaf, whose UTF-8 is the 0x00 prefix and the leaf's bytes:
// no Buffer to allocate and fill per leaf (~1.3 against ~3.9 µs for an event's canonical form).
export function leafHash(leaf: Buffer | string): Buffer {
  if (typeof leaf === 'string') return sha256(`\u0000${leaf}`);
  const bytes = Buffer.allocUnsafe(1 + leaf.length);
  bytes[0] = 0x00;
  leaf.copy(bytes, 1);
  return sha256(bytes);
}

/** `leafHash(leaf)` as hex, for the sequencer's array text. */
export function leafHashHex(leaf: string): string {
  return hash('sha256', `\u0000${leaf}`, 'hex');
}

/**
 * `eventHash(prevHash, leaf)` (hex) and `leafHash(leaf)` of one leaf, its text written out as
 * UTF-8 once into a buffer kept between calls: [pad][prevHash][leaf] is the chain hash's input
 * from the pad's end; the byte before the leaf, set to 0x00 after, starts the leaf hash's.
 */
let scratch = Buffer.allocUnsafe(1 << 16);

export function chainAndLeafHash(prevHash: string, leaf: string): { chain: string; leaf: Buffer } {
  const room = 1 + 3 * (prevHash.length + leaf.length);
  if (scratch.length < room) scratch = Buffer.allocUnsafe(Math.max(room, 2 * scratch.length));
  const prevEnd = 1 + scratch.write(prevHash, 1, 'utf8');
  const end = prevEnd + scratch.write(leaf, prevEnd, 'utf8');
  return chainAndLeafHashOfBytes(scratch.subarray(0, end), prevEnd);
}

/**
 * `chainAndLeafHash` of a leaf already written out as bytes: `bytes` holds a pad byte, the
 * prevHash's UTF-8 and from `leafAt` the leaf's (a writer that builds the leaf as bytes hashes
 * them without a string of them). The byte before the leaf is set to 0x00.
 */
export function chainAndLeafHashOfBytes(bytes: Buffer, leafAt: number): { chain: string; leaf: Buffer } {
  const chain = hash('sha256', bytes.subarray(1), 'hex');
  bytes[leafAt - 1] = 0x00;
  return { chain, leaf: sha256(bytes.subarray(leafAt - 1)) };
}

/** A node's input, 0x01 and its children's hashes, written into one buffer kept between calls. */
const nodeInput = Buffer.allocUnsafe(65);

export function nodeHash(left: Buffer, right: Buffer): Buffer {
  if (left.length !== 32 || right.length !== 32) return sha256(Buffer.concat([Buffer.of(0x01), left, right]));
  nodeInput[0] = 0x01;
  nodeInput.set(left, 1);
  nodeInput.set(right, 33);
  return sha256(nodeInput);
}

export const EMPTY_ROOT = sha256(Buffer.alloc(0));
