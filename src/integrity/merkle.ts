/**
 * RFC 6962 (and RFC 9162 §2.1) Merkle trees: roots, proofs and proof verification over the leaf
 * and node hashes of hashes.ts. Pure functions: the offline export verifier
 * (src/compliance/verify-export.ts) uses them too.
 *
 * Tollgate keeps the hash of every *perfect* subtree (a node covering leaves
 * [idx·2^level, (idx+1)·2^level)) once it is complete: the leaves (level 0) are the event chain's
 * stored leaf hashes, the nodes from level `LOWEST_STORED_LEVEL` up are stored (table
 * merkle_nodes), and the ones between are hashed from their leaves when read (src/integrity/log.ts,
 * `treeNodes`); such a node never changes. Roots and proofs for any tree size are then built from
 * O(log n) nodes: the algorithms below run twice, once collecting which perfect nodes they need
 * (`NodeSource` that records), once computing with the fetched hashes.
 */
import { EMPTY_ROOT, nodeHash } from './hashes';

/**
 * Nodes of levels 1 to 3 (subtrees of 2–8 leaves) are 7/8 of a tree's nodes above its leaves.
 * Storing them was most of a checkpoint's database work per event (a row, its index entry and
 * WAL each); a proof needs at most one of each level, which its ≤ 8 leaves give in ≤ 7 hashes
 * (docs/decisions/merkle-stored-levels.md).
 */
export const LOWEST_STORED_LEVEL = 4;

/** The largest power of two strictly smaller than n (n ≥ 2). */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

const isPow2 = (n: number) => n > 0 && Number.isInteger(Math.log2(n));

/** A perfect subtree: leaves [idx·2^level, (idx+1)·2^level). */
export interface NodeId {
  level: number;
  idx: number;
}

/** Gives the hash of a stored perfect subtree. */
export type NodeSource = (level: number, idx: number) => Buffer;

/**
 * Hashes of subtrees that are not perfect (a tree's right edge), by range, computed from one
 * `NodeSource`: every proof against one tree size needs the same few, and recomputing them per
 * proof was most of an export's CPU per event (docs/performance.md).
 */
export type SubtreeMemo = Map<string, Buffer>;

/** MTH(D[lo:hi]) following RFC 6962's split; every perfect aligned subtree comes from `get`. */
export function subtreeHash(lo: number, hi: number, get: NodeSource, memo?: SubtreeMemo): Buffer {
  const n = hi - lo;
  if (n <= 0) throw new Error(`empty range ${lo}..${hi}`);
  if (isPow2(n) && lo % n === 0) return get(Math.round(Math.log2(n)), lo / n);
  const key = memo && `${lo}:${hi}`;
  const known = key && memo.get(key);
  if (known) return known;
  const k = splitPoint(n);
  const h = nodeHash(subtreeHash(lo, lo + k, get, memo), subtreeHash(lo + k, hi, get, memo));
  if (key) memo.set(key, h);
  return h;
}

export function rootOf(size: number, get: NodeSource): Buffer {
  return size === 0 ? EMPTY_ROOT : subtreeHash(0, size, get);
}

/**
 * RFC 6962 §2.1.1 PATH(m, D[n]): the audit path of leaf `index` in the tree of `size` leaves,
 * bottom-up. Pass one `memo` for many proofs from the same `get`.
 */
export function inclusionProof(index: number, size: number, get: NodeSource, memo?: SubtreeMemo): Buffer[] {
  if (!(index >= 0 && index < size)) throw new RangeError(`leaf index ${index} is not below tree size ${size}`);
  // Down from the root, taking the sibling at each split; the path is their reverse.
  const siblings: Buffer[] = [];
  let [lo, hi, m] = [0, size, index];
  while (hi - lo > 1) {
    const k = splitPoint(hi - lo);
    if (m < k) {
      siblings.push(subtreeHash(lo + k, hi, get, memo));
      hi = lo + k;
    } else {
      siblings.push(subtreeHash(lo, lo + k, get, memo));
      m -= k;
      lo += k;
    }
  }
  return siblings.reverse();
}

/**
 * Inclusion proofs of many leaves against one tree size, each node as base64 text: `inclusionProof`
 * of each index, with the sibling at each depth of the descent written out once for as long as it
 * stays the same (for neighbouring leaves, all but the lowest few), where each proof looked every
 * node up and wrote it out again. `memo` as for `inclusionProof`.
 */
export function proofTexts(size: number, get: NodeSource, memo: SubtreeMemo): (index: number) => string[] {
  const byDepth: { lo: number; hi: number; text: string }[] = [];
  return (index) => {
    if (!(index >= 0 && index < size)) throw new RangeError(`leaf index ${index} is not below tree size ${size}`);
    const texts: string[] = [];
    let [lo, hi, m, depth] = [0, size, index, 0];
    while (hi - lo > 1) {
      const n = hi - lo;
      const k = n <= 2 ** 31 ? 1 << (31 - Math.clz32(n - 1)) : splitPoint(n);
      let sibling: [number, number];
      if (m < k) {
        sibling = [lo + k, hi];
        hi = lo + k;
      } else {
        sibling = [lo, lo + k];
        m -= k;
        lo += k;
      }
      const known = byDepth[depth];
      if (known && known.lo === sibling[0] && known.hi === sibling[1]) texts.push(known.text);
      else {
        const text = subtreeHash(sibling[0], sibling[1], get, memo).toString('base64');
        byDepth[depth] = { lo: sibling[0], hi: sibling[1], text };
        texts.push(text);
      }
      depth += 1;
    }
    return texts.reverse();
  };
}

/** RFC 6962 §2.1.2 PROOF(m, D[n]): consistency of the first `first` leaves with the tree of `second`. */
export function consistencyProof(first: number, second: number, get: NodeSource): Buffer[] {
  if (!(first >= 0 && first <= second)) throw new RangeError(`sizes ${first}, ${second} are not 0 ≤ first ≤ second`);
  if (first === 0 || first === second) return [];
  const sub = (m: number, lo: number, hi: number, b: boolean): Buffer[] => {
    const n = hi - lo;
    if (m === n) return b ? [] : [subtreeHash(lo, hi, get)];
    const k = splitPoint(n);
    return m <= k ? [...sub(m, lo, lo + k, b), subtreeHash(lo + k, hi, get)] : [...sub(m - k, lo + k, hi, false), subtreeHash(lo, lo + k, get)];
  };
  return sub(first, 0, second, true);
}

/**
 * A perfect node's key in a map of nodes: its index and level in one number (exact while indexes
 * stay below 2^47). A batch of proofs looks nodes up thousands of times; a string made per lookup
 * cost more than the lookup.
 */
export const nodeKey = (level: number, idx: number): number => idx * 64 + level;

/** Runs `compute` with a recording source: the perfect nodes it reads (deduplicated). */
export function nodesNeeded(compute: (get: NodeSource) => unknown): NodeId[] {
  const seen = new Map<number, NodeId>();
  const zero = Buffer.alloc(32);
  compute((level, idx) => {
    const key = nodeKey(level, idx);
    if (!seen.has(key)) seen.set(key, { level, idx });
    return zero;
  });
  return [...seen.values()];
}

/** A NodeSource over fetched rows; a missing node is a hard error (the tree is not built that far). */
export function sourceOf(nodes: { level: number; idx: number; hash: Buffer }[]): NodeSource {
  const m = new Map<number, Buffer>();
  for (const n of nodes) m.set(nodeKey(n.level, n.idx), n.hash);
  return (level, idx) => {
    const h = m.get(nodeKey(level, idx));
    if (!h) throw new Error(`merkle node ${level}:${idx} is not stored`);
    return h;
  };
}

/**
 * Appends leaves to a tree given its compact range (the perfect subtree roots of its current size,
 * left to right, largest first): returns every perfect node completed (leaves included) and the new
 * compact range.
 */
export function appendLeaves(
  size: number,
  range: Buffer[],
  leafHashes: Buffer[],
): { nodes: { level: number; idx: number; hash: Buffer }[]; range: Buffer[]; size: number } {
  // The compact range's levels are the set bits of `size`, highest first.
  const stack: { level: number; hash: Buffer }[] = [];
  let bits = size;
  const levels: number[] = [];
  for (let level = 0; bits > 0; level++, bits = Math.floor(bits / 2)) if (bits % 2 === 1) levels.unshift(level);
  if (levels.length !== range.length) throw new Error(`compact range has ${range.length} hashes, size ${size} needs ${levels.length}`);
  levels.forEach((level, i) => stack.push({ level, hash: range[i] }));
  const nodes: { level: number; idx: number; hash: Buffer }[] = [];
  let n = size;
  for (const lh of leafHashes) {
    let cur = { level: 0, hash: lh };
    nodes.push({ level: 0, idx: n, hash: lh });
    n += 1;
    while (stack.length > 0 && stack[stack.length - 1].level === cur.level) {
      const left = stack.pop()!;
      const level = cur.level + 1;
      cur = { level, hash: nodeHash(left.hash, cur.hash) };
      nodes.push({ level, idx: n / 2 ** level - 1, hash: cur.hash });
    }
    stack.push(cur);
  }
  return { nodes, range: stack.map((s) => s.hash), size: n };
}

/** `appendLeaves`' new compact range and size alone, for a walk that keeps no node (no node object per leaf and level). */
export function extendRange(size: number, range: Buffer[], leafHashes: Buffer[]): { range: Buffer[]; size: number } {
  const levels: number[] = [];
  for (let level = 0, bits = size; bits > 0; level++, bits = Math.floor(bits / 2)) if (bits % 2 === 1) levels.unshift(level);
  if (levels.length !== range.length) throw new Error(`compact range has ${range.length} hashes, size ${size} needs ${levels.length}`);
  const hashes = range.slice();
  for (const lh of leafHashes) {
    let [level, hash] = [0, lh];
    while (levels.length > 0 && levels[levels.length - 1] === level) {
      levels.pop();
      hash = nodeHash(hashes.pop()!, hash);
      level += 1;
    }
    levels.push(level);
    hashes.push(hash);
  }
  return { range: hashes, size: size + leafHashes.length };
}

/** The perfect nodes forming the compact range of a tree of `size` leaves, largest first. */
export function compactRangeIds(size: number): NodeId[] {
  const out: NodeId[] = [];
  let lo = 0;
  for (let level = 52; level >= 0; level--) {
    const w = 2 ** level;
    if (size - lo >= w) {
      out.push({ level, idx: lo / w });
      lo += w;
    }
  }
  return out;
}

const lsb = (x: number) => x % 2 === 1;
const half = (x: number) => Math.floor(x / 2);

/** RFC 9162 §2.1.3.2: the root an inclusion proof leads to (null when the proof has the wrong shape). */
export function rootFromInclusionProof(index: number, size: number, leaf: Buffer, proof: Buffer[]): Buffer | null {
  if (!(index >= 0 && index < size)) return null;
  let at: ProofState = { fn: index, sn: size - 1, r: leaf };
  for (const p of proof) {
    if (at.sn === 0) return null;
    at = inclusionStep(at, p);
  }
  return at.sn === 0 ? at.r : null;
}

/** Where RFC 9162 §2.1.3.2's walk stands: the node's position, the last position, the hash so far. */
interface ProofState {
  fn: number;
  sn: number;
  r: Buffer;
}

/** One step of that walk: the hash so far joined with the proof's next node `p`. */
function inclusionStep(at: ProofState, p: Buffer): ProofState {
  let { fn, sn } = at;
  let r: Buffer;
  if (lsb(fn) || fn === sn) {
    r = nodeHash(p, at.r);
    if (!lsb(fn)) {
      while (!(lsb(fn) || fn === 0)) {
        fn = half(fn);
        sn = half(sn);
      }
    }
  } else {
    r = nodeHash(at.r, p);
  }
  return { fn: half(fn), sn: half(sn), r };
}

/** Whether `leaf` (its leaf hash) is at `index` of the tree of `size` leaves whose root is `root`. */
export function verifyInclusion(leaf: Buffer, at: { index: number; size: number; proof: Buffer[] }, root: Buffer): boolean {
  const r = rootFromInclusionProof(at.index, at.size, leaf, at.proof);
  return r !== null && r.equals(root);
}

/**
 * `verifyInclusion` for many proofs against one root, each proof's steps remembered: the proofs
 * of neighbouring leaves join below the root, and from the step where this proof's state (its
 * position and the hash so far) and its remaining nodes are those of the last proof that verified,
 * the rest of the computation is that proof's, already verified. A proof's answer is exactly
 * `verifyInclusion`'s; leaves in order cost about two hashes each instead of one per level.
 */
export class InclusionVerifier {
  private last: ProofState[] = [];
  private lastProof: string[] = [];

  constructor(
    private readonly size: number,
    private readonly root: Buffer,
  ) {}

  /** Whether `leaf` is at `index`; `proof` as base64 strings (decoded only where they are hashed). */
  verify(leaf: Buffer, index: number, proof: string[]): boolean {
    if (!(index >= 0 && index < this.size)) return false;
    let at: ProofState = { fn: index, sn: this.size - 1, r: leaf };
    const steps: ProofState[] = [];
    for (let k = 0; k < proof.length; k++) {
      const seen = this.last[k];
      if (seen && seen.fn === at.fn && seen.sn === at.sn && seen.r.equals(at.r) && this.sameRest(proof, k)) {
        this.last = [...steps, ...this.last.slice(k)];
        this.lastProof = proof;
        return true;
      }
      steps.push(at);
      if (at.sn === 0) return false;
      at = inclusionStep(at, Buffer.from(proof[k], 'base64'));
    }
    if (at.sn !== 0 || !at.r.equals(this.root)) return false;
    this.last = steps;
    this.lastProof = proof;
    return true;
  }

  private sameRest(proof: string[], k: number): boolean {
    if (proof.length !== this.lastProof.length) return false;
    for (let i = k; i < proof.length; i++) if (proof[i] !== this.lastProof[i]) return false;
    return true;
  }
}

/** RFC 9162 §2.1.4.2: whether the tree of `first` leaves (root `firstRoot`) is a prefix of the one of `second` (root `secondRoot`). */
export function verifyConsistency(sizes: { first: number; second: number; proof: Buffer[] }, firstRoot: Buffer, secondRoot: Buffer): boolean {
  const { first, second, proof } = sizes;
  if (first > second) return false;
  if (first === second) return proof.length === 0 && firstRoot.equals(secondRoot);
  if (first === 0) return proof.length === 0;
  const path = isPow2(first) ? [firstRoot, ...proof] : [...proof];
  if (path.length === 0) return false;
  let fn = first - 1;
  let sn = second - 1;
  while (lsb(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = path[0];
  let sr = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (lsb(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (!lsb(fn)) {
        while (!(lsb(fn) || fn === 0)) {
          fn = half(fn);
          sn = half(sn);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && fr.equals(firstRoot) && sr.equals(secondRoot);
}
