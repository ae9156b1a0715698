/** The directory archive store: whole objects or none, streamed reads, keys kept inside the directory. */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { DirectoryArchiveStore } from '../../../src/archive-store/directory';
import { ArchiveObjectMissing } from '../../../src/archive-store/store';

describe('DirectoryArchiveStore', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'tollgate-archive-store-'));
  const store = new DirectoryArchiveStore(root);

  it('writes a stream under its key, reads it back as a stream, heads and deletes it', async () => {
    const pieces = [Buffer.from('first '), Buffer.from('second')];
    expect(await store.put('proj_a/arch_1.tar', Readable.from(pieces))).toEqual({ bytes: 12 });
    expect(store.locate('proj_a/arch_1.tar')).toBe(path.join(root, 'proj_a', 'arch_1.tar'));
    expect(readFileSync(path.join(root, 'proj_a', 'arch_1.tar'), 'utf8')).toBe('first second');
    const read: Buffer[] = [];
    for await (const c of await store.get('proj_a/arch_1.tar')) read.push(c as Buffer);
    expect(Buffer.concat(read).toString()).toBe('first second');
    expect(await store.head('proj_a/arch_1.tar')).toEqual({ bytes: 12 });
    await store.delete('proj_a/arch_1.tar');
    expect(await store.head('proj_a/arch_1.tar')).toBeNull();
    await store.delete('proj_a/arch_1.tar');
    await expect(store.get('proj_a/arch_1.tar')).rejects.toBeInstanceOf(ArchiveObjectMissing);
  });

  it('leaves no object and no partial file when the source fails mid-write, and keeps the previous object', async () => {
    await store.put('proj_b/x.tar', Readable.from([Buffer.from('old')]));
    async function* failing() {
      yield Buffer.from('new bytes');
      throw new Error('source died');
    }
    await expect(store.put('proj_b/x.tar', failing())).rejects.toThrow('source died');
    expect(readdirSync(path.join(root, 'proj_b'))).toEqual(['x.tar']);
    expect(readFileSync(path.join(root, 'proj_b', 'x.tar'), 'utf8')).toBe('old');
    await expect(store.put('proj_b/y.tar', failing())).rejects.toThrow('source died');
    expect(await store.head('proj_b/y.tar')).toBeNull();
  });

  it.each(['', '/abs', '../out', 'a/../../b', 'a//b', './a'])('refuses the key %j', async (key) => {
    await expect(store.put(key, Readable.from([]))).rejects.toThrow(/bad key/);
  });
});
