/**
 * The offline verifier of a compliance export bundle (`npm run cli -- verify-export <bundle> --key <vkey>`).
 * Needs only the bundle and the note verifier key (GET /v1/integrity/checkpoint-public-key): no
 * server, no database. It checks, in this order, and reports every failure, the first one first:
 *
 * 1. manifest.note is a signed note by the key; its text is the manifest (JSON);
 * 2. checkpoint.note is a signed C2SP checkpoint by the key, of the manifest's origin and size;
 * 3. every file the manifest lists is present, with its sha256 and byte count; no other file;
 * 4. proofs.ndjson has one line per log index of the manifest's range, in order, each inclusion
 *    proof leading from its leaf hash to the checkpoint's root;
 * 5. events.ndjson has, for each index, the event whose bytes hash to that leaf (RFC 6962 leaf
 *    hash of the line), no event twice, no event outside the range, and each event's prev_hash is
 *    the chain hash of the one before (sha256(prev_hash ‖ canonical bytes)).
 */
import { createHash } from 'node:crypto';
import { InclusionVerifier, leafHash } from '../integrity/merkle';
import { openNote, parseCheckpointText, parseVerifierKey, type Checkpoint, type NoteVerifier } from '../integrity/note';

export const MANIFEST_FORMAT = 'tollgate.compliance-export/v1';

export interface ExportManifest {
  format: string;
  export_id: string;
  project_id: string;
  created_at: string;
  window: { since: string; until: string };
  include: string[];
  log: { origin: string; first_index: number | null; last_index: number | null; event_count: number; checkpoint_size: number | null };
  files: { name: string; sha256: string; bytes: number; records: number }[];
  key_id: string;
}

export interface VerifyFailure {
  check: 'key' | 'manifest_signature' | 'manifest' | 'checkpoint_signature' | 'checkpoint' | 'file_missing' | 'file_unexpected' | 'file_hash' | 'proof' | 'event_missing' | 'event_altered' | 'event_unexpected' | 'chain';
  message: string;
  file?: string;
  line?: number;
  index?: number;
  position?: number;
  event_id?: string;
}

export interface VerifyResult {
  object: 'export_verification';
  ok: boolean;
  export_id: string | null;
  project_id: string | null;
  checkpoint: { origin: string; tree_size: number; root_hash: string } | null;
  events_verified: number;
  files_verified: number;
  failures: VerifyFailure[];
}

const sha256hex = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

function lines(buf: Buffer | undefined): string[] {
  if (!buf || buf.length === 0) return [];
  const text = buf.toString('utf8');
  return (text.endsWith('\n') ? text.slice(0, -1) : text).split('\n');
}

export function verifyExport(files: Map<string, Buffer>, key: string): VerifyResult {
  const result: VerifyResult = { object: 'export_verification', ok: false, export_id: null, project_id: null, checkpoint: null, events_verified: 0, files_verified: 0, failures: [] };
  const fail = (f: VerifyFailure) => {
    result.failures.push(f);
    return result;
  };
  let verifier: NoteVerifier;
  try {
    verifier = parseVerifierKey(key);
  } catch (err) {
    return fail({ check: 'key', message: `the key is not a note verifier key: ${(err as Error).message}` });
  }

  // 1. The manifest.
  const manifestNote = files.get('manifest.note');
  if (!manifestNote) return fail({ check: 'file_missing', file: 'manifest.note', message: 'manifest.note is missing' });
  const opened = openNote(manifestNote.toString('utf8'), verifier);
  if (!opened.ok) return fail({ check: 'manifest_signature', file: 'manifest.note', message: `manifest signature: ${opened.error}` });
  let manifest: ExportManifest;
  try {
    manifest = JSON.parse(opened.text) as ExportManifest;
    if (manifest.format !== MANIFEST_FORMAT) throw new Error(`format is ${JSON.stringify(manifest.format)}, expected ${MANIFEST_FORMAT}`);
  } catch (err) {
    return fail({ check: 'manifest', file: 'manifest.note', message: `manifest: ${(err as Error).message}` });
  }
  result.export_id = manifest.export_id;
  result.project_id = manifest.project_id;

  // 2. The checkpoint.
  let checkpoint: Checkpoint | null = null;
  if (manifest.log.checkpoint_size !== null) {
    const cpNote = files.get('checkpoint.note');
    if (!cpNote) return fail({ check: 'file_missing', file: 'checkpoint.note', message: 'checkpoint.note is missing' });
    const cp = openNote(cpNote.toString('utf8'), verifier);
    if (!cp.ok) return fail({ check: 'checkpoint_signature', file: 'checkpoint.note', message: `checkpoint signature: ${cp.error}` });
    try {
      checkpoint = parseCheckpointText(cp.text);
    } catch (err) {
      return fail({ check: 'checkpoint', file: 'checkpoint.note', message: `checkpoint: ${(err as Error).message}` });
    }
    if (checkpoint.origin !== manifest.log.origin || checkpoint.size !== manifest.log.checkpoint_size) {
      return fail({ check: 'checkpoint', file: 'checkpoint.note', message: `the checkpoint (${checkpoint.origin}, size ${checkpoint.size}) is not the one the manifest names (${manifest.log.origin}, size ${manifest.log.checkpoint_size})` });
    }
    result.checkpoint = { origin: checkpoint.origin, tree_size: checkpoint.size, root_hash: checkpoint.root.toString('base64') };
  }

  // 3. File hashes (the per-record checks below still run, to locate a change).
  const listed = new Set(manifest.files.map((f) => f.name));
  for (const f of manifest.files) {
    const content = files.get(f.name);
    if (!content) {
      fail({ check: 'file_missing', file: f.name, message: `${f.name} is listed in the manifest but missing` });
      continue;
    }
    const got = sha256hex(content);
    if (got !== f.sha256 || content.length !== f.bytes) {
      fail({ check: 'file_hash', file: f.name, message: `${f.name}: sha256 ${got} (${content.length} bytes) does not match the manifest's ${f.sha256} (${f.bytes} bytes)` });
      continue;
    }
    result.files_verified += 1;
  }
  for (const name of files.keys()) {
    if (name !== 'manifest.note' && !listed.has(name)) fail({ check: 'file_unexpected', file: name, message: `${name} is not listed in the manifest` });
  }

  // 4 and 5. Events against the checkpoint.
  if (manifest.include.includes('events') && manifest.log.first_index !== null && manifest.log.last_index !== null) {
    if (!checkpoint) return fail({ check: 'checkpoint', message: 'the manifest lists events but no checkpoint' });
    const first = manifest.log.first_index;
    const last = manifest.log.last_index;
    if (last >= checkpoint.size) return fail({ check: 'checkpoint', message: `log index ${last} is not covered by the checkpoint of size ${checkpoint.size}` });
    const eventLines = lines(files.get('events.ndjson'));
    const bySeq = new Map<number, { line: number; text: string; id: string; prev_hash: string }>();
    const used = new Set<number>();
    eventLines.forEach((text, i) => {
      try {
        const e = JSON.parse(text) as { seq: number; id: string; prev_hash: string };
        if (bySeq.has(e.seq)) fail({ check: 'event_unexpected', file: 'events.ndjson', line: i + 1, event_id: e.id, message: `events.ndjson line ${i + 1}: event seq ${e.seq} appears twice` });
        else bySeq.set(e.seq, { line: i + 1, text, id: e.id, prev_hash: e.prev_hash });
      } catch {
        fail({ check: 'event_altered', file: 'events.ndjson', line: i + 1, message: `events.ndjson line ${i + 1} is not JSON` });
      }
    });
    const proofLines = lines(files.get('proofs.ndjson'));
    // Neighbouring leaves' proofs share their upper nodes: each is hashed once (merkle.ts).
    const inclusion = new InclusionVerifier(checkpoint.size, checkpoint.root);
    let prev: { text: string; prev_hash: string } | null = null;
    for (let index = first; index <= last; index++) {
      const k = index - first;
      const pos = index + 1;
      let p: { index: number; seq: number; leaf_hash: string; proof: string[] };
      try {
        p = JSON.parse(proofLines[k] ?? 'null') as typeof p;
        if (!p || p.index !== index) throw new Error('wrong index');
      } catch {
        fail({ check: 'proof', file: 'proofs.ndjson', line: k + 1, index, position: pos, message: `proofs.ndjson line ${k + 1}: no proof for log index ${index}` });
        prev = null;
        continue;
      }
      used.add(p.seq);
      const lh = Buffer.from(p.leaf_hash, 'base64');
      if (!Array.isArray(p.proof) || !p.proof.every((h) => typeof h === 'string') || !inclusion.verify(lh, index, p.proof)) {
        fail({ check: 'proof', file: 'proofs.ndjson', line: k + 1, index, position: pos, message: `log index ${index} (position ${pos}): the inclusion proof does not lead to the checkpoint's root` });
        prev = null;
        continue;
      }
      const e = bySeq.get(p.seq);
      if (!e) {
        fail({ check: 'event_missing', file: 'events.ndjson', index, position: pos, message: `log index ${index} (position ${pos}, seq ${p.seq}): the logged event is missing from events.ndjson` });
        prev = null;
        continue;
      }
      if (!leafHash(e.text).equals(lh)) {
        fail({ check: 'event_altered', file: 'events.ndjson', line: e.line, index, position: pos, event_id: e.id, message: `log index ${index} (position ${pos}, event ${e.id}, events.ndjson line ${e.line}): the event's bytes differ from what the log holds` });
        prev = null;
        continue;
      }
      if (prev && e.prev_hash !== sha256hex(prev.prev_hash + prev.text)) {
        fail({ check: 'chain', file: 'events.ndjson', line: e.line, index, position: pos, event_id: e.id, message: `log index ${index} (event ${e.id}): prev_hash does not continue the hash chain` });
      }
      prev = { text: e.text, prev_hash: e.prev_hash };
      result.events_verified += 1;
    }
    if (proofLines.length > last - first + 1) fail({ check: 'proof', file: 'proofs.ndjson', line: last - first + 2, message: 'proofs.ndjson has lines beyond the manifest\'s range' });
    for (const [seq, e] of bySeq) {
      if (!used.has(seq)) fail({ check: 'event_unexpected', file: 'events.ndjson', line: e.line, event_id: e.id, message: `events.ndjson line ${e.line} (event ${e.id}) is not in the logged range` });
    }
  }
  result.ok = result.failures.length === 0;
  return result;
}
