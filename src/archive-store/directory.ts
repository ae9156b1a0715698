/**
 * The archive store in a directory (ARCHIVE_DIR). An object is written to a temporary file beside
 * its place, flushed to disk, then renamed into place and the directory flushed: a reader sees the
 * whole file or none, and a file retention relied on to delete rows survives a power loss. A
 * scratch object (an archive's part files, read back into the archive and deleted) is not flushed.
 *
 * A flushed object is flushed as it is written, every FLUSH_EVERY bytes, not only at its end: one
 * flush of a whole archive's dirty pages held the disk long enough that PostgreSQL's commits beside
 * it, which each wait for their WAL to reach the disk, stalled behind it
 * (docs/decisions/archive-store.md).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { ArchiveObjectMissing, checkKey, type ArchiveStore, type PutOptions } from './store';

/** Bytes written between two flushes of an object (one flush in flight at a time). */
const FLUSH_EVERY = 8 << 20;

export class DirectoryArchiveStore implements ArchiveStore {
  constructor(private readonly root: string) {}

  locate(key: string): string {
    return path.join(this.root, ...checkKey(key).split('/'));
  }

  async put(key: string, body: Readable | AsyncIterable<Uint8Array>, options: PutOptions = {}): Promise<{ bytes: number }> {
    const file = this.locate(key);
    await mkdir(path.dirname(file), { recursive: true });
    // Named per write: two writers of one key (a retried step beside a stalled one) never share a file.
    const tmp = `${file}.${randomUUID()}.partial`;
    let bytes = 0;
    try {
      const fh = await open(tmp, 'w');
      try {
        // One write in flight while the next chunk is made (an archive's bundle: read and hashed):
        // the copy into the file overlaps the source's work rather than waiting for it.
        let writing: Promise<unknown> | null = null;
        let flushing: Promise<void> | null = null;
        let flushedAt = 0;
        for await (const chunk of body as AsyncIterable<Uint8Array>) {
          if (writing) await writing;
          if (!options.scratch && bytes - flushedAt >= FLUSH_EVERY && !flushing) {
            // The data written so far, while the next chunks are written; an error surfaces below.
            flushedAt = bytes;
            flushing = fh.datasync().then(() => void (flushing = null));
            flushing.catch(() => undefined);
          }
          writing = fh.write(chunk);
          // Awaited before the next write or after the last; a failure meanwhile is not unhandled.
          writing.catch(() => undefined);
          bytes += chunk.length;
        }
        if (writing) await writing;
        if (flushing) await flushing;
        if (!options.scratch) await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, file);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    if (!options.scratch) await syncDirectory(path.dirname(file));
    return { bytes };
  }

  async get(key: string): Promise<Readable> {
    const file = this.locate(key);
    // Opened before it is returned, so a missing file is an error here rather than on the stream.
    const fh = await open(file, 'r').catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'ENOENT' ? new ArchiveObjectMissing(file) : err;
    });
    // Read a mebibyte at a time: an archive's files are copied into it, and read back, a read each.
    return fh.createReadStream({ highWaterMark: 1 << 20 });
  }

  async head(key: string): Promise<{ bytes: number } | null> {
    try {
      const s = await stat(this.locate(key));
      return s.isFile() ? { bytes: s.size } : null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.locate(key), { force: true });
  }
}

async function syncDirectory(dir: string): Promise<void> {
  // Not every platform can open a directory for fsync (Windows); the rename is done either way.
  const fh = await open(dir, 'r').catch(() => null);
  if (!fh) return;
  try {
    await fh.sync().catch(() => undefined);
  } finally {
    await fh.close();
  }
}
