/**
 * The export bundle's tar (src/compliance/tar.ts): the streamed pieces (header, content, padding,
 * end) make the same archive `writeTar` does, `tarBytes` predicts its length before any content is
 * read (the download's Content-Length), and `readTar` reads it back.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readTar, tarBytes, tarHeader, tarPadding, TAR_END, writeTar } from '../../../src/compliance/tar';

const files = [
  { name: 'manifest.note', content: Buffer.from('manifest\n') },
  { name: 'empty.ndjson', content: Buffer.alloc(0) },
  { name: 'block.ndjson', content: Buffer.alloc(512, 0x61) },
  { name: 'events.ndjson', content: Buffer.from('{"a":1}\n'.repeat(1000)) },
];

describe('export bundle tar', () => {
  it('streams the same bytes writeTar writes, of the length tarBytes predicts', () => {
    const whole = writeTar(files);
    const pieces = Buffer.concat([...files.flatMap((f) => [tarHeader(f.name, f.content.length), f.content, tarPadding(f.content.length)]), TAR_END]);
    expect(pieces.equals(whole)).toBe(true);
    expect(tarBytes(files.map((f) => f.content.length))).toBe(whole.length);
    expect(whole.length % 512).toBe(0);
    const back = readTar(whole);
    for (const f of files) expect(back.get(f.name)?.equals(f.content)).toBe(true);
  });

  it('is an archive tar itself unpacks', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-tar-'));
    try {
      writeFileSync(path.join(dir, 'bundle.tar'), writeTar(files));
      execFileSync('tar', ['xf', 'bundle.tar'], { cwd: dir });
      for (const f of files) expect(readFileSync(path.join(dir, f.name)).equals(f.content)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses names a ustar header cannot hold', () => {
    expect(() => tarHeader('x'.repeat(100), 1)).toThrow(/name too long/);
  });
});
