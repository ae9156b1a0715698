/**
 * The export verifier over a stream (src/compliance/verify-stream.ts, `BundleVerifier`): a bundle
 * fed in pieces of any size reports what the verifier of whole files reports, whatever the order of
 * its members; a changed line, a missing file and a truncated object fail as they should; and
 * `verify-export` reads a bundle file and an unpacked directory through it.
 */
import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { canonicalJson } from '../../../src/events/canonical-json';
import { inclusionProof, rootOf, splitPoint } from '../../../src/integrity/merkle';
import { leafHash, nodeHash } from '../../../src/integrity/hashes';
import { checkpointText, signNote, verifierKey } from '../../../src/integrity/note';
import { writeTar } from '../../../src/compliance/tar';
import { BundleVerifier, MANIFEST_FORMAT, verifyExport, type ExportManifest, type VerifyResult } from '../../../src/compliance/verify-export';
import { verifyExportCommand } from '../../../src/compliance/verify-command';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const spki = publicKey.export({ format: 'der', type: 'spki' });
const pub = spki.subarray(spki.length - 32);
const KEY_NAME = 'tollgate.test/compliance';
const vkey = verifierKey(KEY_NAME, pub);
const sha256hex = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

type Files = { name: string; content: Buffer }[];

/** A bundle of `events` logged events at indexes 3.. of a tree of `events + 5` leaves, a row file, signed notes. */
function bundle(events = 40, edit?: (files: Map<string, Buffer>) => void): Files {
  const first = 3;
  const size = first + events + 2;
  const leaves: Buffer[] = [];
  const lines: string[] = [];
  let prev = '0'.repeat(64);
  for (let i = 0; i < size; i++) {
    // Multi-byte text, so lines cross pieces mid-character too.
    const text = canonicalJson({ seq: 100 + i, id: `evt_${i}`, type: 'test.event', data: { note: `é€ ${'x'.repeat(i * 7)}` }, prev_hash: prev });
    prev = sha256hex(prev + text);
    leaves.push(leafHash(text));
    if (i >= first && i < first + events) lines.push(text);
  }
  const get = (level: number, idx: number): Buffer => {
    const sub = (lo: number, n: number): Buffer => (n === 1 ? leaves[lo] : nodeHash(sub(lo, splitPoint(n)), sub(lo + splitPoint(n), n - splitPoint(n))));
    return sub(idx * 2 ** level, 2 ** level);
  };
  const origin = 'tollgate.compliance/events/proj_test';
  const root = rootOf(size, get);
  const proofs = lines.map((_, k) => JSON.stringify({ index: first + k, seq: 100 + first + k, leaf_hash: leaves[first + k].toString('base64'), proof: inclusionProof(first + k, size, get).map((b) => b.toString('base64')) }));
  const files = new Map<string, Buffer>([
    ['checkpoint.note', Buffer.from(signNote(checkpointText({ origin, size, root, extensions: [] }), KEY_NAME, privateKey, pub))],
    ['events.ndjson', Buffer.from(lines.map((l) => `${l}\n`).join(''))],
    ['permits.ndjson', Buffer.from(lines.map((_, k) => `{"id":"pmt_${k}"}\n`).join(''))],
    ['proofs.ndjson', Buffer.from(proofs.map((l) => `${l}\n`).join(''))],
  ]);
  const manifest: ExportManifest = {
    format: MANIFEST_FORMAT,
    export_id: 'cexp_test',
    project_id: 'proj_test',
    created_at: new Date(0).toISOString(),
    window: { since: new Date(0).toISOString(), until: new Date(1).toISOString() },
    include: ['events', 'permits'],
    log: { origin, first_index: first, last_index: first + events - 1, event_count: events, checkpoint_size: size },
    files: [...files].map(([name, content]) => ({ name, sha256: sha256hex(content), bytes: content.length, records: name.endsWith('.ndjson') ? events : 1 })),
    key_id: 'test',
  };
  edit?.(files);
  return [{ name: 'manifest.note', content: Buffer.from(signNote(`${canonicalJson(manifest)}\n`, KEY_NAME, privateKey, pub)) }, ...[...files].map(([name, content]) => ({ name, content }))];
}

function streamed(tar: Buffer, piece: number): VerifyResult {
  const v = new BundleVerifier(vkey);
  for (let at = 0; at < tar.length; at += piece) v.write(tar.subarray(at, at + piece));
  return v.finish();
}

const whole = (files: Files) => verifyExport(new Map(files.map((f) => [f.name, f.content])), vkey);

describe('the export verifier over a stream', () => {
  it('verifies a bundle fed in pieces of any size as the whole-file verifier does', () => {
    const files = bundle();
    const tar = writeTar(files);
    const expected = whole(files);
    expect(expected).toMatchObject({ ok: true, events_verified: 40, files_verified: 4, failures: [] });
    for (const piece of [1, 7, 511, 4096, tar.length]) expect(streamed(tar, piece)).toEqual(expected);
  });

  it('accepts the members in any order (data before the manifest, proofs before events)', () => {
    const files = bundle();
    const reordered = [...files].reverse();
    expect(reordered[0].name).toBe('proofs.ndjson');
    expect(streamed(writeTar(reordered), 1000)).toEqual(whole(files));
  });

  it('locates a changed line: the file hash, then the event whose bytes differ from its leaf (the next one\'s chain is not checked against it)', () => {
    const files = bundle(40, (m) => {
      const text = m.get('events.ndjson')!.toString('utf8').split('\n');
      text[9] = text[9].replace('test.event', 'test.evenT');
      m.set('events.ndjson', Buffer.from(text.join('\n')));
    });
    const r = streamed(writeTar(files), 333);
    expect(r).toEqual(whole(files));
    expect(r.ok).toBe(false);
    expect(r.failures.map((f) => f.check)).toEqual(['file_hash', 'event_altered']);
    expect(r.failures[1]).toMatchObject({ line: 10, index: 12, event_id: 'evt_12' });
    expect(r.events_verified).toBe(39);
  });

  it('reports a missing file and every index it leaves unproved', () => {
    const files = bundle(5).filter((f) => f.name !== 'proofs.ndjson');
    const r = streamed(writeTar(files), 100);
    expect(r).toEqual(whole(files));
    expect(r.failures.map((f) => f.check)).toEqual(['file_missing', 'proof', 'proof', 'proof', 'proof', 'proof', 'event_unexpected', 'event_unexpected', 'event_unexpected', 'event_unexpected', 'event_unexpected']);
    expect(r.failures[0].message).toBe('proofs.ndjson is listed in the manifest but missing');
  });

  it('throws on a truncated object', () => {
    const tar = writeTar(bundle());
    const events = tar.indexOf('events.ndjson');
    expect(() => streamed(tar.subarray(0, events + 2000), 500)).toThrow('tar: truncated archive');
  });

  it('is what verify-export runs on a bundle file and on its unpacked directory', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-verify-'));
    try {
      const files = bundle(300);
      writeFileSync(path.join(dir, 'bundle.tar'), writeTar(files));
      mkdirSync(path.join(dir, 'unpacked'));
      for (const f of files) writeFileSync(path.join(dir, 'unpacked', f.name), f.content);
      const expected = whole(files);
      expect(expected.ok).toBe(true);
      expect(verifyExportCommand(path.join(dir, 'bundle.tar'), vkey)).toEqual(expected);
      expect(verifyExportCommand(path.join(dir, 'unpacked'), vkey)).toEqual(expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
