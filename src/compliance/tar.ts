/**
 * A minimal POSIX ustar writer and reader for export bundles (regular files, names under 100
 * bytes). `tar xf bundle.tar` unpacks what `writeTar` writes; `readTar` reads both.
 */
const BLOCK = 512;

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0';
}

/** The 512-byte ustar header of a regular file of `size` bytes. */
export function tarHeader(name: string, size: number, mtime = 0): Buffer {
  if (Buffer.byteLength(name) >= 100) throw new Error(`tar: name too long: ${name}`);
  const h = Buffer.alloc(BLOCK, 0);
  h.write(name, 0, 'utf8');
  h.write(octal(0o644, 8), 100, 'ascii');
  h.write(octal(0, 8), 108, 'ascii');
  h.write(octal(0, 8), 116, 'ascii');
  h.write(octal(size, 12), 124, 'ascii');
  h.write(octal(mtime, 12), 136, 'ascii');
  h.write('        ', 148, 'ascii'); // checksum placeholder
  h.write('0', 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'ascii');
  return h;
}

/** The zero bytes after a file's content of `size` bytes, up to the next block. */
export function tarPadding(size: number): Buffer {
  return Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK, 0);
}

/** The end of an archive: two zero blocks. */
export const TAR_END: Buffer = Buffer.alloc(BLOCK * 2, 0);

/** The length of the archive `writeTar` (or the same pieces, streamed) makes of files of these sizes. */
export function tarBytes(sizes: number[]): number {
  return sizes.reduce((n, size) => n + BLOCK + Math.ceil(size / BLOCK) * BLOCK, 0) + TAR_END.length;
}

export function writeTar(files: { name: string; content: Buffer }[], mtime = 0): Buffer {
  return Buffer.concat([...files.flatMap((f) => [tarHeader(f.name, f.content.length, mtime), f.content, tarPadding(f.content.length)]), TAR_END]);
}

export function readTar(buf: Buffer): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  let off = 0;
  while (off + BLOCK <= buf.length) {
    const h = buf.subarray(off, off + BLOCK);
    if (h.every((b) => b === 0)) break;
    const name = h.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    const prefix = h.subarray(345, 500).toString('utf8').replace(/\0.*$/s, '');
    const size = parseInt(h.subarray(124, 136).toString('ascii').replace(/\0.*$/s, '').trim() || '0', 8);
    const type = String.fromCharCode(h[156] || 48);
    off += BLOCK;
    if (!Number.isFinite(size) || off + size > buf.length) throw new Error('tar: truncated archive');
    if (type === '0' || type === '\0') {
      const full = (prefix ? `${prefix}/${name}` : name).replace(/^\.\//, '');
      out.set(full.split('/').pop()!, Buffer.from(buf.subarray(off, off + size)));
    }
    off += Math.ceil(size / BLOCK) * BLOCK;
  }
  return out;
}

/** Where a streamed member's content goes: `write` a piece at a time, then `end`. */
export interface TarMemberSink {
  write(piece: Buffer): void;
  end(): void;
}

/**
 * `readTar` as a stream: fed the archive a piece at a time, it hands each regular file's content
 * to the sink `onMember` gives for it (by its base name, as `readTar` keys it), never holding more
 * than a header. The pieces handed on are views of the pieces fed: a sink copies what it keeps.
 */
export class TarReader {
  private header = Buffer.alloc(BLOCK);
  private headerFill = 0;
  private content = 0;
  private padding = 0;
  private sink: TarMemberSink | null = null;
  private done = false;

  constructor(private readonly onMember: (name: string, size: number) => TarMemberSink | null) {}

  write(piece: Buffer): void {
    let off = 0;
    while (off < piece.length && !this.done) {
      if (this.content > 0) {
        const n = Math.min(this.content, piece.length - off);
        this.sink?.write(piece.subarray(off, off + n));
        off += n;
        this.content -= n;
        if (this.content === 0) this.endMember();
      } else if (this.padding > 0) {
        const n = Math.min(this.padding, piece.length - off);
        off += n;
        this.padding -= n;
      } else {
        const n = Math.min(BLOCK - this.headerFill, piece.length - off);
        piece.copy(this.header, this.headerFill, off, off + n);
        off += n;
        this.headerFill += n;
        if (this.headerFill === BLOCK) this.startMember();
      }
    }
  }

  /** The archive's end: a member cut short is a truncated archive (as `readTar` says). */
  end(): void {
    if (this.content > 0) throw new Error('tar: truncated archive');
  }

  private startMember(): void {
    const h = this.header;
    this.headerFill = 0;
    if (h.every((b) => b === 0)) {
      this.done = true;
      return;
    }
    const name = h.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    const prefix = h.subarray(345, 500).toString('utf8').replace(/\0.*$/s, '');
    const size = parseInt(h.subarray(124, 136).toString('ascii').replace(/\0.*$/s, '').trim() || '0', 8);
    const type = String.fromCharCode(h[156] || 48);
    if (!Number.isFinite(size) || size < 0) throw new Error('tar: truncated archive');
    const regular = type === '0' || type === '\0';
    this.sink = regular ? this.onMember((prefix ? `${prefix}/${name}` : name).replace(/^\.\//, '').split('/').pop()!, size) : null;
    this.content = size;
    this.padding = Math.ceil(size / BLOCK) * BLOCK - size;
    if (size === 0) this.endMember();
  }

  private endMember(): void {
    const sink = this.sink;
    this.sink = null;
    sink?.end();
  }
}
