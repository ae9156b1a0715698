/**
 * An operator's check of one project's event log, in place (`npm run cli -- integrity verify
 * --project <id>`): every event against the hash chain and its stored leaf hash, and the latest
 * signed checkpoint against the chain (its signature under the key that made it, and its root
 * recomputed from the chain's leaves alone, not from the stored tree). A checkpoint signs the
 * events as they were chained, so an event edited after its chaining is reported here (and by an
 * export's verification), not by a refused checkpoint (docs/decisions/checkpoints-sign-what-was-chained.md).
 */
import type { Pool } from 'pg';
import { verifyEventChain } from '../db/repositories/event-chain-verification';
import { latestCheckpoint, listComplianceKeys } from '../db/repositories/integrity-log';
import { logAnchor } from '../db/repositories/archives';
import { LogIntegrityError, logOrigin, rootFromChain, rootOfRange } from './log';
import { openNote, parseCheckpointText, parseVerifierKey, verifierKey } from './note';

export interface LogVerification {
  object: 'log_verification';
  project_id: string;
  ok: boolean;
  /** Positions archived by retention (checked by their archive, `verify-export`): verification starts after them. */
  archived_through: number;
  archive_id: string | null;
  /** Leaves (events and call records) whose chain hash (and stored leaf hash) matched, in chain order, before the first that did not. */
  events_verified: number;
  /** The first event or call record that no longer matches the chain: edited, removed or reordered after it was logged. */
  broken_at_seq: number | null;
  checkpoint: {
    tree_size: number;
    key_id: string;
    signature: 'valid' | 'invalid';
    /** `chain_broken`: the chain's links fail before the checkpoint's size (see `failures`). */
    root: 'matches_chain' | 'differs' | 'chain_broken';
  } | null;
  failures: string[];
}

export async function verifyLog(db: Pool, projectId: string): Promise<LogVerification> {
  const failures: string[] = [];
  // The latest checkpoint before the walk: the walk builds the tree of its size as it goes.
  const cp = await latestCheckpoint(db, projectId);
  const chain = await verifyEventChain(db, projectId, { treeSize: cp ? Number(cp.tree_size) : undefined });
  if (!chain.ok) failures.push(`the event or call record at seq ${chain.broken_at_seq} no longer matches the hash chain (edited, removed or reordered after it was logged)`);
  const anchor = await logAnchor(db, projectId);
  let checkpoint: LogVerification['checkpoint'] = null;
  if (cp) {
    const size = Number(cp.tree_size);
    const key = (await listComplianceKeys(db)).find((k) => k.kid === cp.kid);
    let signature: 'valid' | 'invalid' = 'invalid';
    if (key) {
      const opened = openNote(cp.note, parseVerifierKey(verifierKey(key.key_name, key.public_key)));
      const body = opened.ok ? parseCheckpointText(opened.text) : null;
      signature = body && body.origin === logOrigin(projectId) && body.size === size && body.root.equals(cp.root_hash) ? 'valid' : 'invalid';
    }
    if (signature !== 'valid') failures.push(`the checkpoint of size ${size}: its signed note does not verify under its key or does not state its origin, size and root`);
    let root: 'matches_chain' | 'differs' | 'chain_broken';
    try {
      const fromWalk = chain.range_at_size ? rootOfRange(chain.range_at_size) : null;
      root = (fromWalk ?? (await rootFromChain(db, projectId, size))).equals(cp.root_hash) ? 'matches_chain' : 'differs';
      if (root === 'differs') failures.push(`the checkpoint of size ${size} does not sign the chain's first ${size} leaves`);
    } catch (err) {
      if (!(err instanceof LogIntegrityError)) throw err;
      root = 'chain_broken';
      failures.push(`the checkpoint of size ${size} cannot be recomputed: ${err.message}`);
    }
    checkpoint = { tree_size: size, key_id: cp.kid, signature, root };
  }
  return {
    object: 'log_verification',
    project_id: projectId,
    ok: failures.length === 0,
    archived_through: anchor?.position ?? 0,
    archive_id: anchor?.archiveId ?? null,
    events_verified: chain.count,
    broken_at_seq: chain.broken_at_seq,
    checkpoint,
    failures,
  };
}
