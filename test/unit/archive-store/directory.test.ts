/** The directory archive store: whole objects or none, streamed reads, keys kept inside the directory. */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
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

  it('flushes a large object as it writes it, not only at its end, and a scratch object not at all', async () => {
    // FileHandle's class, from a handle: its datasync is what a flush in flight calls.
    const probe = await open(path.join(root, 'probe'), 'w');
    const FileHandle = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
    await probe.close();
    // Flushes that end at once: how many there are then depends on the bytes written alone, not
    // on how long this machine's disk takes to flush.
    const datasync = jest.spyOn(FileHandle, 'datasync').mockResolvedValue(undefined);
    try {
      const pieces = Array.from({ length: 40 }, () => randomBytes(1 << 20));
      const digest = (b: Buffer) => createHash('sha256').update(b).digest('hex');
      expect(await store.put('proj_c/big.tar', Readable.from(pieces))).toEqual({ bytes: 40 << 20 });
      expect(digest(readFileSync(path.join(root, 'proj_c', 'big.tar')))).toBe(digest(Buffer.concat(pieces)));
      // One flush after each 8 MiB written, before the next chunk: at 8, 16, 24 and 32 MiB of 40.
      expect(datasync).toHaveBeenCalledTimes(4);
      datasync.mockClear();
      await store.put('proj_c/scratch', Readable.from(pieces), { scratch: true });
      expect(datasync).not.toHaveBeenCalled();
      // A source that fails after flushes began leaves no object.
      async function* failing() {
        yield* pieces.slice(0, 20);
        throw new Error('source died');
      }
      await expect(store.put('proj_c/cut.tar', failing())).rejects.toThrow('source died');
      expect(await store.head('proj_c/cut.tar')).toBeNull();
      expect(readdirSync(path.join(root, 'proj_c')).sort()).toEqual(['big.tar', 'scratch']);
    } finally {
      datasync.mockRestore();
    }
  });

  it.each(['', '/abs', '../out', 'a/../../b', 'a//b', './a'])('refuses the key %j', async (key) => {
    await expect(store.put(key, Readable.from([]))).rejects.toThrow(/bad key/);
  });
});
