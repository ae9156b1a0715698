import { createHash, generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { eventHash } from '../../../src/events/canonical';
import { appendLeaves, extendRange, consistencyProof, inclusionProof, InclusionVerifier, proofTexts, rootOf, sourceOf, splitPoint, verifyConsistency, verifyInclusion } from '../../../src/integrity/merkle';
import { chainAndLeafHash, EMPTY_ROOT, leafHashHex, leafHash, nodeHash, sha256 } from '../../../src/integrity/hashes';
import { checkpointText, openNote, parseCheckpointText, parseVerifierKey, signNote, verifierKey } from '../../../src/integrity/note';

/** RFC 6962 MTH computed directly from the leaves, independent of the stored-node code. */
function naiveRoot(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return EMPTY_ROOT;
  if (leaves.length === 1) return leafHash(leaves[0]);
  const k = splitPoint(leaves.length);
  return nodeHash(naiveRoot(leaves.slice(0, k)), naiveRoot(leaves.slice(k)));
}

function buildStore(leaves: Buffer[], chunks: number[]) {
  // Appends in uneven chunks, as successive checkpoint rounds do.
  let state = { nodes: [] as { level: number; idx: number; hash: Buffer }[], range: [] as Buffer[], size: 0 };
  const all: { level: number; idx: number; hash: Buffer }[] = [];
  let i = 0;
  let c = 0;
  while (i < leaves.length) {
    const n = Math.min(chunks[c++ % chunks.length], leaves.length - i);
    state = appendLeaves(state.size, state.range, leaves.slice(i, i + n).map((l) => leafHash(l)));
    all.push(...state.nodes);
    i += n;
  }
  return sourceOf(all);
}

describe('extending a compact range', () => {
  it('gives the range and size appendLeaves gives, in any chunks from any size', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 70 }), fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 5 }), (start, chunks) => {
        const leaves = Array.from({ length: start + chunks.reduce((a, b) => a + b, 0) }, (_, i) => leafHash(`leaf ${i}`));
        const first = appendLeaves(0, [], leaves.slice(0, start));
        let [lean, full] = [{ range: first.range, size: start }, { range: first.range, size: start }];
        let i = start;
        for (const n of chunks) {
          lean = extendRange(lean.size, lean.range, leaves.slice(i, i + n));
          const out = appendLeaves(full.size, full.range, leaves.slice(i, i + n));
          full = { range: out.range, size: out.size };
          i += n;
          expect(lean).toEqual(full);
        }
      }),
    );
    expect(() => extendRange(3, [leafHash('a')], [])).toThrow(/size 3 needs 2/);
  });
});

describe('RFC 6962 hashes', () => {
  it('match known answers and a hash computed byte by byte', () => {
    // RFC 6962's test vectors: the empty tree, and the leaf hash of the empty leaf.
    expect(EMPTY_ROOT.toString('hex')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(leafHash(Buffer.alloc(0)).toString('hex')).toBe('6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d');
    const text = '{"event":"é😀"}';
    const byHand = (prefix: number, ...parts: Buffer[]) => parts.reduce((h, p) => h.update(p), createHash('sha256').update(Buffer.from([prefix]))).digest();
    expect(leafHash(text)).toEqual(byHand(0, Buffer.from(text, 'utf8')));
    expect(leafHash(Buffer.from(text, 'utf8'))).toEqual(leafHash(text));
    expect(leafHashHex(text)).toBe(byHand(0, Buffer.from(text, 'utf8')).toString('hex'));
    expect(leafHash('')).toEqual(leafHash(Buffer.alloc(0)));
    const [a, b] = [leafHash('a'), leafHash('b')];
    expect(nodeHash(a, b)).toEqual(byHand(1, a, b));
  });

  it('sha256 and nodeHash give the digest byte for byte, every byte value, each result its own', () => {
    const digest = (...parts: Uint8Array[]) => parts.reduce((h, p) => h.update(p), createHash('sha256')).digest();
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes, l, r) => {
        expect(sha256(bytes)).toEqual(digest(bytes));
        const [left, right] = [Buffer.from(l), Buffer.from(r)];
        const node = nodeHash(left, right);
        const copy = Buffer.from(node);
        expect(node).toEqual(digest(Uint8Array.of(1), left, right));
        // The node's input is written into a buffer kept between calls: a later node leaves this one as it was.
        nodeHash(right, left);
        expect(node).toEqual(copy);
      }),
    );
    // Digests holding every byte value round trip (the digest is taken as a string of one unit per byte).
    const seen = new Set<number>();
    for (let i = 0; i < 128; i++) {
      const d = sha256(String(i));
      expect(d).toEqual(digest(Buffer.from(String(i))));
      for (const b of d) seen.add(b);
    }
    expect(seen.size).toBe(256);
    // Children of other lengths (a malformed proof) are hashed as they are.
    expect(nodeHash(Buffer.from('ab'), Buffer.from('c'))).toEqual(digest(Uint8Array.of(1), Buffer.from('abc')));
  });

  it('chainAndLeafHash gives eventHash and leafHash of the same leaf, whatever its link and length', () => {
    const leaves = ['', '{"event":"é😀"}', 'x'.repeat(70_000), '\u2028"\\', '😀'.repeat(40_000), 'short again'];
    const links = ['0'.repeat(64), '', 'é', 'f'.repeat(64)];
    for (const leaf of leaves) {
      for (const link of links) {
        const h = chainAndLeafHash(link, leaf);
        expect(h.chain).toBe(eventHash(link, leaf));
        expect(h.leaf).toEqual(leafHash(leaf));
      }
    }
  });
});

describe('RFC 6962 tree over stored perfect subtrees', () => {
  const leaves = Array.from({ length: 41 }, (_, i) => Buffer.from(`{"event":${i}}`));
  const get = buildStore(leaves, [1, 3, 7, 2, 5]);

  it('roots match the direct MTH for every size', () => {
    for (let n = 0; n <= leaves.length; n++) expect(rootOf(n, get).toString('hex')).toBe(naiveRoot(leaves.slice(0, n)).toString('hex'));
  });

  it('every inclusion proof verifies, and fails for another leaf, index or root', () => {
    for (let n = 1; n <= leaves.length; n++) {
      const root = rootOf(n, get);
      for (let i = 0; i < n; i++) {
        const proof = inclusionProof(i, n, get);
        expect(verifyInclusion(leafHash(leaves[i]), { index: i, size: n, proof }, root)).toBe(true);
        expect(verifyInclusion(leafHash(Buffer.from('forged')), { index: i, size: n, proof }, root)).toBe(false);
        if (n > 1) expect(verifyInclusion(leafHash(leaves[i]), { index: (i + 1) % n, size: n, proof }, root)).toBe(false);
        expect(verifyInclusion(leafHash(leaves[i]), { index: i, size: n, proof }, EMPTY_ROOT)).toBe(false);
      }
    }
  });

  it('proofs sharing one memo of subtree hashes are the proofs computed alone', () => {
    for (let n = 1; n <= leaves.length; n++) {
      const memo = new Map<string, Buffer>();
      for (let i = 0; i < n; i++) expect(inclusionProof(i, n, get, memo)).toEqual(inclusionProof(i, n, get));
      // Only subtrees that are not perfect are kept: none for a power-of-two size; for 7 leaves, [4, 7).
      if ((n & (n - 1)) === 0) expect(memo.size).toBe(0);
      if (n === 7) expect([...memo.keys()]).toEqual(['4:7']);
    }
  });

  it('proofTexts gives each proof in base64, as inclusionProof does, in order, out of order and repeated', () => {
    const b64 = (p: Buffer[]) => p.map((h) => h.toString('base64'));
    for (let n = 1; n <= leaves.length; n++) {
      const texts = proofTexts(n, get, new Map());
      const order = [...Array(n).keys(), ...Array.from({ length: n }, (_, k) => (k * 7) % n), 0, n - 1, 0];
      for (const i of order) expect(texts(i)).toEqual(b64(inclusionProof(i, n, get)));
      expect(() => texts(n)).toThrow(RangeError);
    }
  });

  it('an InclusionVerifier answers as verifyInclusion, proofs in order and shuffled, with forged leaves, indexes and nodes among them', () => {
    const b64 = (p: Buffer[]) => p.map((h) => h.toString('base64'));
    for (let n = 1; n <= leaves.length; n++) {
      const root = rootOf(n, get);
      const cases: { leaf: Buffer; index: number; proof: Buffer[] }[] = [];
      for (let i = 0; i < n; i++) {
        const proof = inclusionProof(i, n, get);
        cases.push({ leaf: leafHash(leaves[i]), index: i, proof });
        cases.push({ leaf: leafHash(Buffer.from('forged')), index: i, proof });
        if (n > 1) cases.push({ leaf: leafHash(leaves[i]), index: (i + 1) % n, proof });
        // One node of the proof replaced, at each level in turn: the verified part below it is shared with a good proof.
        for (let k = 0; k < proof.length; k++) cases.push({ leaf: leafHash(leaves[i]), index: i, proof: proof.map((h, j) => (j === k ? leafHash(Buffer.from('x')) : h)) });
        cases.push({ leaf: leafHash(leaves[i]), index: i, proof: proof.slice(0, -1) });
      }
      const shuffled = cases.map((c, k) => ({ c, key: (k * 7919) % cases.length })).sort((a, b) => a.key - b.key).map((x) => x.c);
      for (const order of [cases, shuffled]) {
        const verifier = new InclusionVerifier(n, root);
        for (const c of order) expect(verifier.verify(c.leaf, c.index, b64(c.proof))).toBe(verifyInclusion(c.leaf, { index: c.index, size: n, proof: c.proof }, root));
      }
    }
  });

  it('every consistency proof verifies, and fails against a different old root', () => {
    for (let n = 1; n <= leaves.length; n++) {
      for (let m = 1; m <= n; m++) {
        const proof = consistencyProof(m, n, get);
        expect(verifyConsistency({ first: m, second: n, proof }, rootOf(m, get), rootOf(n, get))).toBe(true);
        if (m < n) {
          const forged = naiveRoot([...leaves.slice(0, m - 1), Buffer.from('x')]);
          expect(verifyConsistency({ first: m, second: n, proof }, forged, rootOf(n, get))).toBe(false);
        }
      }
    }
  });
});

describe('C2SP signed notes and checkpoints', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const spki = publicKey.export({ format: 'der', type: 'spki' });
  const pub = spki.subarray(spki.length - 32);

  it('signs and opens; a changed byte or another key fails', () => {
    const text = checkpointText({ origin: 'example.com/log', size: 5, root: leafHash('x'), extensions: [] });
    const note = signNote(text, 'example.com/log', privateKey, pub);
    expect(note.startsWith(`${text}\n— example.com/log `)).toBe(true);
    const vkey = verifierKey('example.com/log', pub);
    expect(vkey).toMatch(/^example\.com\/log\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/);
    const v = parseVerifierKey(vkey);
    const opened = openNote(note, v);
    expect(opened).toEqual({ ok: true, text });
    expect(parseCheckpointText(text)).toMatchObject({ origin: 'example.com/log', size: 5 });
    expect(openNote(note.replace('\n5\n', '\n6\n'), v).ok).toBe(false);
    const other = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' });
    expect(openNote(note, parseVerifierKey(verifierKey('example.com/log', other.subarray(other.length - 32)))).ok).toBe(false);
    expect(() => parseVerifierKey(vkey.replace(/\+[0-9a-f]{8}\+/, '+00000000+'))).toThrow();
  });
});
