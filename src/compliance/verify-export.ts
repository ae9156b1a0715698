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
import { ExportVerifier } from './verify-stream';
import { TarReader } from './tar';
import type { VerifyResult } from './export-format';

export { MANIFEST_FORMAT, type ExportManifest, type VerifyFailure, type VerifyResult } from './export-format';

/** The order files are checked in: the notes, then the events before their proofs (a bundle's own order holds none back). */
const FIRST = ['manifest.note', 'checkpoint.note', 'events.ndjson'];

/** Verifies an export's files, each whole in memory (a bundle read with `readTar`, a test's edit of one). */
export function verifyExport(files: Map<string, Buffer>, key: string): VerifyResult {
  const v = new ExportVerifier(key);
  const names = [...FIRST.filter((n) => files.has(n)), ...[...files.keys()].filter((n) => !FIRST.includes(n))];
  for (const name of names) {
    const sink = v.file(name);
    sink.write(files.get(name)!);
    sink.end();
  }
  return v.finish();
}

/**
 * A bundle's verification as its bytes stream in: `write` each piece, then `finish`. A piece that
 * breaks the tar's framing throws (`tar: truncated archive` at `finish` for one cut short).
 */
export class BundleVerifier {
  private readonly verifier: ExportVerifier;
  private readonly tar: TarReader;

  constructor(key: string) {
    this.verifier = new ExportVerifier(key);
    this.tar = new TarReader((name) => this.verifier.file(name));
  }

  write(piece: Buffer): void {
    this.tar.write(piece);
  }

  finish(): VerifyResult {
    this.tar.end();
    return this.verifier.finish();
  }
}

/** Verifies the files of a bundle unpacked into sinks one at a time (a directory's files): `open(name)` streams one into its sink. */
export function verifyExportFiles(names: string[], key: string, open: (name: string, sink: { write(piece: Buffer): void }) => void): VerifyResult {
  const v = new ExportVerifier(key);
  for (const name of [...FIRST.filter((n) => names.includes(n)), ...names.filter((n) => !FIRST.includes(n))]) {
    const sink = v.file(name);
    open(name, sink);
    sink.end();
  }
  return v.finish();
}
