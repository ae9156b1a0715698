import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readTar } from './tar';
import { verifyExport, type VerifyResult } from './verify-export';

/** `verify-export <bundle> --key <key>`: the bundle is the downloaded .tar or a directory it was unpacked into; the key a note verifier key or a file holding one. */
export function verifyExportCommand(bundlePath: string, keyArg: string): VerifyResult {
  const key = existsSync(keyArg) && statSync(keyArg).isFile() ? readFileSync(keyArg, 'utf8').trim() : keyArg;
  let files: Map<string, Buffer>;
  if (statSync(bundlePath).isDirectory()) {
    files = new Map(readdirSync(bundlePath).filter((n) => statSync(join(bundlePath, n)).isFile()).map((n) => [n, readFileSync(join(bundlePath, n))]));
  } else {
    files = readTar(readFileSync(bundlePath));
  }
  return verifyExport(files, key);
}
