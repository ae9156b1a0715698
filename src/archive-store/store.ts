/**
 * Where retention's archives and compliance exports' files are kept (docs/decisions/archive-store.md):
 * a directory (ARCHIVE_DIR) or an S3-compatible bucket (ARCHIVE_S3_*). Objects are written and read
 * as streams, never whole in memory, and appear whole or not at all: a write that is interrupted
 * (an error in its source, a killed process) leaves no object under its key.
 */
import type { Readable } from 'node:stream';

export interface ArchiveStore {
  /** Where an object is, for reports and operators: a file path or an s3:// URL (never a credential). */
  locate(key: string): string;
  /** Writes `body` under `key` (replacing an object there); resolves once the whole object is stored. */
  put(key: string, body: Readable | AsyncIterable<Uint8Array>, options?: PutOptions): Promise<{ bytes: number }>;
  /** The object as a stream; ArchiveObjectMissing when there is none. */
  get(key: string): Promise<Readable>;
  /** The object's size, or null when there is none. */
  head(key: string): Promise<{ bytes: number } | null>;
  /** Removes the object (none there is no error). */
  delete(key: string): Promise<void>;
}

export interface PutOptions {
  /**
   * An object its writer reads back and deletes before it relies on anything (an archive's part
   * files, src/retention/archive.ts): whole or absent as any object, but not flushed to disk,
   * where a crash leaves it to be written again.
   */
  scratch?: boolean;
}

export class ArchiveObjectMissing extends Error {
  constructor(readonly location: string) {
    super(`no stored object at ${location}`);
    this.name = 'ArchiveObjectMissing';
  }
}

/** Keys are relative, slash-separated names without empty, `.` or `..` segments. */
export function checkKey(key: string): string {
  if (!key || key.startsWith('/') || key.split('/').some((s) => s === '' || s === '.' || s === '..')) throw new Error(`archive store: bad key ${JSON.stringify(key)}`);
  return key;
}
