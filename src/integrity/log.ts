/**
 * Each project's event log as an RFC 6962 Merkle tree, and its signed checkpoints.
 *
 * Leaf i is the event or call record at chain position i + 1; the leaf bytes are the event's
 * canonical form (`canonicalEvent` in src/events/canonical.ts, RFC 8785 JSON including
 * prev_hash; a record's is its leaf event's, `recordLeafCanonical`), the same bytes the hash chain hashes. The sequencer stores each event's leaf hash as it chains it
 * (event_chain.leaf_hash), so a checkpoint signs what was chained: it reads the chain rows in
 * order, checks their links (positions without gaps, each prev_hash the hash before), and builds
 * the tree from the stored leaf hashes; an event row altered or removed after chaining no longer
 * matches its leaf and chain hash, which verification (`verifyEventChain`, an export's proofs)
 * reports (docs/decisions/checkpoints-sign-what-was-chained.md). Rows chained before leaf hashes
 * were stored are written out from their event and re-checked against their chain hash, as before.
 *
 * The tree is extended by `issueCheckpoint` only, under the project's checkpoint lock: it stores
 * the completed perfect subtrees from `LOWEST_STORED_LEVEL` up (the leaves themselves are the
 * chain's stored leaf hashes, or for rows chained before 0115 stored with the nodes; the levels
 * between are hashed from their leaves when read, `treeNodes`), checks that the new root
 * is consistent with the previous checkpoint (a consistency proof built from the stored nodes,
 * verified), and only then signs and stores the checkpoint. Stored nodes are never rewritten, so two checkpoints of one project
 * cannot disagree.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Db, Queryable } from '../db/pool';
import { withTransaction } from '../db/pool';
import { canonicalOfStored } from '../db/repositories/canonical-columns';
import { eventHash, GENESIS_HASH, type CanonicalColumns } from '../events/canonical';
import { readRecordLeafSources, recordLeafCanonical, recordLeafSourceKey } from '../db/repositories/record-leaf-text';
import { logAnchor } from '../db/repositories/archives';
import {
  chainHead,
  chainRowAt,
  getNodes,
  insertCheckpoint,
  insertNodes,
  latestCheckpoint,
  readChainLeavesPacked,
  readChainRangeColumns,
  storedTreeSize,
  tryCheckpointLock,
  type ChainedColumnsRow,
  type CheckpointRow,
} from '../db/repositories/integrity-log';
import { appendLeaves, compactRangeIds, extendRange, consistencyProof, inclusionProof, nodeKey, nodesNeeded, rootOf, sourceOf, verifyConsistency, LOWEST_STORED_LEVEL, type NodeId } from './merkle';
import { leafHash, nodeHash, EMPTY_ROOT } from './hashes';
import { checkpointText, signNote } from './note';
import type { ComplianceSigner } from './keys';

/** Origin line of a project's checkpoints (C2SP tlog-checkpoint). */
export function logOrigin(projectId: string): string {
  return `tollgate.compliance/events/${projectId}`;
}

/** Most leaves one issuance adds (a larger backlog is covered over several rounds). */
export const MAX_LEAVES_PER_CHECKPOINT = 100_000;

/**
 * Leaves written out from their event (rows chained before migration 0115) between two turns of
 * the event loop (~1–1.5 ms of work). The checkpoint activity runs in the API process unless the
 * worker runs apart, and a checkpoint catching up on a busy minute's events competes with every
 * request meanwhile: each of a stream's hops through the event loop waits behind the slice
 * running. 1,000 at once (~20–30 ms) and 200 added ~10–15 ms to a stream's first token while it
 * caught up; 50, ~8–10 (docs/decisions/checkpoints-sign-what-was-chained.md).
 */
const LEAVES_PER_TURN = 50;

/**
 * Chain rows per read. Stored leaf hashes need no slicing within a read: a read's tree work is a
 * node hash per leaf (~2–3 µs each on the development machine). The event loop's longest waits
 * during a checkpoint were scavenges of 7–13 ms (the reads' rows and new nodes living across its
 * awaits), not hashing: reads of 250 rows shortened them a little for 30–50 % more CPU per event;
 * reading the common case packed in one row (`readChainLeavesPacked`) shortened them and cut the
 * CPU by a third (docs/decisions/checkpoints-sign-what-was-chained.md).
 */
const LEAVES_PER_READ = 1000;

export class LogIntegrityError extends Error {
  constructor(
    readonly projectId: string,
    readonly position: number,
    message: string,
  ) {
    super(message);
    this.name = 'LogIntegrityError';
  }
}

/**
 * Checks a chain row without a stored leaf hash against its event (whose link the caller
 * checked); returns the leaf bytes (the event's canonical form, prev_hash included), written from
 * the row's columns or, for a timestamp they cannot carry, from the whole event row. Rows chained
 * before leaf hashes were stored are all events; a call record's row (the sequencer always stores
 * its leaf hash) is written out from its record should its leaf hash be missing all the same.
 */
async function checkedLeaf(db: Queryable, projectId: string, r: ChainedColumnsRow, prev: string): Promise<string> {
  const pos = Number(r.chain_pos);
  let bytes: string;
  let name: string;
  if (r.seq === null || r.id === null) {
    const [record] = await readRecordLeafSources(db, [projectId], [r.chain_seq]);
    if (!record) throw new LogIntegrityError(projectId, pos, `chain position ${pos}: the event or call record (seq ${r.chain_seq}) is missing`);
    bytes = recordLeafCanonical(record, r.prev_hash);
    name = `call record (${recordLeafSourceKey(record).id})`;
  } else {
    if (r.project_id !== projectId) throw new LogIntegrityError(projectId, pos, `chain position ${pos}: the event belongs to another project`);
    bytes = await canonicalOfStored(db, r as CanonicalColumns, r.prev_hash);
    name = `event (${r.id})`;
  }
  if (eventHash(prev, bytes) !== r.hash) throw new LogIntegrityError(projectId, pos, `chain position ${pos}: the ${name} no longer matches its chain hash`);
  return bytes;
}

/**
 * The hashes of perfect nodes: leaves from the chain (or written-out legacy leaves), nodes from
 * `LOWEST_STORED_LEVEL` up as stored, and those between hashed from their leaves, read in the
 * same query. `knownLeaf` gives the leaf hashes the caller has already read from the chain (an
 * export's batch reads its chain rows, leaf hashes with them): those are not read again.
 */
export async function treeNodes(
  db: Queryable,
  projectId: string,
  ids: NodeId[],
  knownLeaf: (idx: number) => Buffer | undefined = () => undefined,
): Promise<{ level: number; idx: number; hash: Buffer }[]> {
  const unstored = (id: NodeId) => id.level > 0 && id.level < LOWEST_STORED_LEVEL;
  const reads = new Map<number, NodeId>();
  const held = new Map<number, Buffer>();
  const needLeaf = (idx: number) => {
    const h = knownLeaf(idx);
    if (h) held.set(idx, h);
    else reads.set(nodeKey(0, idx), { level: 0, idx });
  };
  for (const id of ids) {
    if (id.level === 0) needLeaf(id.idx);
    else if (!unstored(id)) reads.set(nodeKey(id.level, id.idx), id);
    else for (let i = id.idx * 2 ** id.level; i < (id.idx + 1) * 2 ** id.level; i++) needLeaf(i);
  }
  const read = await getNodes(db, projectId, [...reads.values()]);
  const readLeaves = sourceOf(read.filter((n) => n.level === 0));
  const leaf = (idx: number) => held.get(idx) ?? readLeaves(0, idx);
  const hashed = new Map<number, Buffer>();
  const hashOf = (level: number, idx: number): Buffer => {
    if (level === 0) return leaf(idx);
    const key = nodeKey(level, idx);
    let h = hashed.get(key);
    if (!h) hashed.set(key, (h = nodeHash(hashOf(level - 1, 2 * idx), hashOf(level - 1, 2 * idx + 1))));
    return h;
  };
  const known = ids.filter((id) => id.level === 0 && held.has(id.idx)).map((id) => ({ ...id, hash: held.get(id.idx)! }));
  return [...read, ...known, ...ids.filter(unstored).map((id) => ({ ...id, hash: hashOf(id.level, id.idx) }))];
}

async function rootAt(db: Queryable, projectId: string, size: number): Promise<Buffer> {
  if (size === 0) return EMPTY_ROOT;
  const nodes = await treeNodes(db, projectId, nodesNeeded((get) => rootOf(size, get)));
  return rootOf(size, sourceOf(nodes));
}

/** A read's leaf hashes, in chain order, and the tree indexes of those written out from their event (not stored in the chain). */
export interface LeafBatch {
  leaves: Buffer[];
  writtenOut: Set<number>;
}

/**
 * The leaf hashes of chain positions (from, to], a read at a time, each row's link checked (no
 * gap, prev_hash the hash before it): the stored leaf hash, or for a row chained before migration
 * 0115 its event written out and re-checked against its chain hash. Throws LogIntegrityError at
 * the first position that fails.
 */
export async function* chainedLeaves(db: Queryable, projectId: string, from: number, to: number): AsyncGenerator<LeafBatch> {
  let prev = from === 0 ? GENESIS_HASH : ((await chainRowAt(db, projectId, from))?.hash ?? (await archivedHeadAt(db, projectId, from)));
  if (prev === undefined) throw new LogIntegrityError(projectId, from, `chain position ${from} is missing`);
  let n = from;
  while (n < to) {
    // The common case in one row; any gap, broken link or unstored leaf is read again row by row,
    // which names the position or writes the leaf out.
    const packed = await readChainLeavesPacked(db, projectId, { afterPos: n, toPos: to, limit: LEAVES_PER_READ });
    if (
      packed.n > 0 &&
      Number(packed.first_pos) === n + 1 &&
      Number(packed.last_pos) === n + packed.n &&
      packed.first_prev === prev &&
      packed.broken_link === null &&
      !packed.unstored &&
      packed.leaves?.length === packed.n * 32
    ) {
      const all = packed.leaves;
      yield { leaves: Array.from({ length: packed.n }, (_, i) => all.subarray(i * 32, (i + 1) * 32)), writtenOut: new Set() };
      prev = packed.last_hash!;
      n += packed.n;
      continue;
    }
    const rows = await readChainRangeColumns(db, projectId, { afterPos: n, toPos: to, limit: LEAVES_PER_READ });
    if (rows.length === 0) throw new LogIntegrityError(projectId, n + 1, `chain position ${n + 1} is missing`);
    const leaves: Buffer[] = [];
    const writtenOut = new Set<number>();
    let written = 0;
    for (const r of rows) {
      const pos = n + leaves.length + 1;
      if (Number(r.chain_pos) !== pos) throw new LogIntegrityError(projectId, pos, `chain position ${pos} is missing`);
      if (r.prev_hash !== prev) throw new LogIntegrityError(projectId, pos, `chain position ${pos}: prev_hash does not continue the chain`);
      if (r.leaf_hash !== null) leaves.push(r.leaf_hash);
      else {
        if (written > 0 && written % LEAVES_PER_TURN === 0) await nextTurn();
        written += 1;
        writtenOut.add(pos - 1);
        leaves.push(leafHash(await checkedLeaf(db, projectId, r, prev)));
      }
      prev = r.hash;
    }
    yield { leaves, writtenOut };
    n += leaves.length;
  }
}

/** The chain hash at `pos` when its row was deleted by retention: the head hash of the archive ending there. */
async function archivedHeadAt(db: Queryable, projectId: string, pos: number): Promise<string | undefined> {
  const anchor = await logAnchor(db, projectId);
  return anchor && anchor.position === pos ? anchor.headHash : undefined;
}

/** The root of a tree from its compact range (left to right, largest first). */
export function rootOfRange(range: Buffer[]): Buffer {
  if (range.length === 0) return EMPTY_ROOT;
  let root = range[range.length - 1];
  for (let i = range.length - 2; i >= 0; i--) root = nodeHash(range[i], root);
  return root;
}

/**
 * Extends the stored tree of `size` leaves (the latest checkpoint's) to the chain head, at most
 * `max` leaves; returns the new size and root, or null when the chain did not grow.
 */
async function extendTree(db: Queryable, projectId: string, size: number, max: number): Promise<{ size: number; root: Buffer } | null> {
  const head = Math.min(await chainHead(db, projectId), size + max);
  if (head <= size) return null;
  const rangeIds = compactRangeIds(size);
  const fetched = sourceOf(await treeNodes(db, projectId, rangeIds));
  let range = rangeIds.map((id) => fetched(id.level, id.idx));
  let n = size;
  for await (const { leaves, writtenOut } of chainedLeaves(db, projectId, size, head)) {
    const out = appendLeaves(n, range, leaves);
    // Leaves stored in the chain are served from there (getNodes); only written-out ones are kept
    // here, with the nodes from LOWEST_STORED_LEVEL up.
    await insertNodes(db, projectId, out.nodes.filter((node) => node.level >= LOWEST_STORED_LEVEL || (node.level === 0 && writtenOut.has(node.idx))));
    range = out.range;
    n = out.size;
  }
  return { size: n, root: rootOfRange(range) };
}

/**
 * The root of the tree of the chain's first `size` leaves, recomputed from the chain alone (no
 * stored node): what a checkpoint of that size must have signed.
 */
export async function rootFromChain(db: Queryable, projectId: string, size: number): Promise<Buffer> {
  // Leaves archived by retention are gone: the tree of the archived prefix is its compact range,
  // recorded from the chain when the archive was made (docs/decisions/retention-and-archives.md).
  const anchor = await logAnchor(db, projectId);
  const fromAnchor = anchor !== null && anchor.position <= size;
  let range: Buffer[] = fromAnchor ? anchor.range : [];
  let n = fromAnchor ? anchor.position : 0;
  for await (const { leaves } of chainedLeaves(db, projectId, n, size)) {
    const out = extendRange(n, range, leaves);
    range = out.range;
    n = out.size;
  }
  return rootOfRange(range);
}

export type IssueResult = { issued: CheckpointRow } | { issued: null; reason: 'up_to_date' | 'locked' };

/**
 * Issues a checkpoint for the project when its chain grew past the latest one. Throws
 * LogIntegrityError (and issues nothing) when a newly covered event does not match its chain row
 * or the new tree is not consistent with the previous checkpoint.
 */
export async function issueCheckpoint(db: Db, signer: ComplianceSigner, projectId: string): Promise<IssueResult> {
  return withTransaction(db, async (c) => {
    if (!(await tryCheckpointLock(c, projectId))) return { issued: null, reason: 'locked' as const };
    const last = await latestCheckpoint(c, projectId);
    const grown = await extendTree(c, projectId, last ? Number(last.tree_size) : 0, MAX_LEAVES_PER_CHECKPOINT);
    if (!grown) return { issued: null, reason: 'up_to_date' as const };
    const { size, root } = grown;
    if (last) {
      const lastSize = Number(last.tree_size);
      const nodes = await treeNodes(c, projectId, nodesNeeded((get) => consistencyProof(lastSize, size, get)));
      const proof = consistencyProof(lastSize, size, sourceOf(nodes));
      if (!verifyConsistency({ first: lastSize, second: size, proof }, last.root_hash, root)) {
        throw new LogIntegrityError(projectId, lastSize, `tree of size ${size} is not consistent with the checkpoint of size ${lastSize}`);
      }
    }
    const origin = logOrigin(projectId);
    const note = signNote(checkpointText({ origin, size, root, extensions: [] }), signer.keyName, signer.privateKey, signer.publicKey32);
    const issued = await insertCheckpoint(c, { project_id: projectId, tree_size: size, root_hash: root, origin, kid: signer.kid, note });
    return { issued };
  });
}

/** Inclusion proof of leaf `index` in the tree of `size` leaves (size ≤ the stored tree). */
export async function proveInclusion(db: Queryable, projectId: string, index: number, size: number): Promise<{ proof: Buffer[]; leafHash: Buffer; root: Buffer }> {
  const needed = nodesNeeded((get) => {
    inclusionProof(index, size, get);
    rootOf(size, get);
    get(0, index);
  });
  const get = sourceOf(await treeNodes(db, projectId, needed));
  return { proof: inclusionProof(index, size, get), leafHash: get(0, index), root: rootOf(size, get) };
}

export async function proveConsistency(db: Queryable, projectId: string, first: number, second: number): Promise<Buffer[]> {
  const get = sourceOf(await treeNodes(db, projectId, nodesNeeded((g) => consistencyProof(first, second, g))));
  return consistencyProof(first, second, get);
}

export { rootAt, storedTreeSize };
