import { closeSync, existsSync, openSync, readFileSync, readSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BundleVerifier, verifyExportFiles, type VerifyResult } from './verify-export';

/** Bytes read at a time: the bundle streams through the verifier, never whole in memory. */
const PIECE = 1 << 20;

function readPieces(file: string, into: (piece: Buffer) => void): void {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(PIECE);
    for (let n = readSync(fd, buf, 0, PIECE, null); n > 0; n = readSync(fd, buf, 0, PIECE, null)) into(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
}

/** `verify-export <bundle> --key <key>`: the bundle is the downloaded .tar or a directory it was unpacked into; the key a note verifier key or a file holding one. */
export function verifyExportCommand(bundlePath: string, keyArg: string): VerifyResult {
  const key = existsSync(keyArg) && statSync(keyArg).isFile() ? readFileSync(keyArg, 'utf8').trim() : keyArg;
  if (statSync(bundlePath).isDirectory()) {
    const names = readdirSync(bundlePath).filter((n) => statSync(join(bundlePath, n)).isFile());
    return verifyExportFiles(names, key, (name, sink) => readPieces(join(bundlePath, name), (p) => sink.write(p)));
  }
  const v = new BundleVerifier(key);
  readPieces(bundlePath, (p) => v.write(p));
  return v.finish();
}
