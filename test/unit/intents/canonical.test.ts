import { createHash } from 'node:crypto';
import { generateKeyPairSync } from 'node:crypto';
import {
  canonicalAmendment,
  canonicalDeclaration,
  canonicalIntent,
  canonicalIntentHash,
  canonicalJson,
} from '../../../src/intents/canonical';
import { signerFromMasterKey, verifySignatureB64 } from '../../../src/intents/signing';

describe('canonical intent (RFC 8785)', () => {
  it('sorts keys and ignores the order of the request', () => {
    const a = canonicalIntent({ max_calls: 10, expected_calls: 5, expected_model: 'gpt-4o-mini' });
    const b = canonicalIntent({ expected_model: 'gpt-4o-mini', expected_calls: 5, max_calls: 10 });
    expect(a).toBe('{"expected_calls":5,"expected_model":"gpt-4o-mini","max_calls":10}');
    expect(a).toBe(b);
  });

  it('omits absent and null fields', () => {
    expect(canonicalIntent({ expected_calls: 5, max_calls: undefined, expected_model: null as never })).toBe('{"expected_calls":5}');
  });

  it('formats numbers per ECMAScript (RFC 8785 §3.2.2.3)', () => {
    expect(canonicalJson({ b: 1e21, a: 1.0, c: -0, d: 'é\u2028' })).toBe('{"a":1,"b":1e+21,"c":0,"d":"é\u2028"}');
  });

  it('hashes to sha256:<64 hex> and differs when the intent differs', () => {
    const h1 = canonicalIntentHash({ expected_calls: 5 });
    expect(h1).toMatch(/^sha256:[0-9a-f]{64}$/);
    // sha256('{"expected_calls":5}')
    expect(h1).toBe('sha256:' + createHash('sha256').update('{"expected_calls":5}').digest('hex'));
    expect(canonicalIntentHash({ expected_calls: 6 })).not.toBe(h1);
    expect(canonicalIntentHash({ expected_calls: 5, max_calls: 5 })).not.toBe(h1);
  });
});

describe('signatures (Ed25519)', () => {
  const masterKey = Buffer.alloc(32, 7).toString('base64');
  const declaration = {
    project_id: 'proj_1',
    workflow_id: 'wf-1',
    canonical_intent_hash: 'sha256:' + 'a'.repeat(64),
    version: 1,
    declared_at: '2025-01-01T00:00:00.000Z',
    declared_by: { type: 'api_key', id: 'key_1' },
  };

  it('derives the same key from the same master key and a different one from another', () => {
    const a = signerFromMasterKey(masterKey);
    const b = signerFromMasterKey(masterKey);
    const c = signerFromMasterKey(Buffer.alloc(32, 8).toString('base64'));
    expect(a.publicKeyB64).toBe(b.publicKeyB64);
    expect(a.kid).toBe(b.kid);
    expect(c.publicKeyB64).not.toBe(a.publicKeyB64);
    expect(Buffer.from(a.publicKeyB64, 'base64')).toHaveLength(32);
    expect(a.kid).toMatch(/^ed25519_[0-9a-f]{16}$/);
  });

  it('signs the canonical declaration; the public key verifies it and rejects tampering', () => {
    const signer = signerFromMasterKey(masterKey);
    const message = canonicalDeclaration(declaration);
    expect(message).toBe(
      '{"canonical_intent_hash":"sha256:' + 'a'.repeat(64) + '","declared_at":"2025-01-01T00:00:00.000Z","declared_by":{"id":"key_1","type":"api_key"},"project_id":"proj_1","version":1,"workflow_id":"wf-1"}',
    );
    const sig = signer.signB64(message);
    expect(Buffer.from(sig, 'base64')).toHaveLength(64);
    // Ed25519 is deterministic.
    expect(signer.signB64(message)).toBe(sig);
    expect(verifySignatureB64(signer.publicKeyB64, message, sig)).toBe(true);
    expect(verifySignatureB64(signer.publicKeyB64, canonicalDeclaration({ ...declaration, version: 2 }), sig)).toBe(false);
    const other = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64');
    expect(verifySignatureB64(other, message, sig)).toBe(false);
  });

  it('signs amendments over every amendment field', () => {
    const signer = signerFromMasterKey(masterKey);
    const amendment = {
      project_id: 'proj_1',
      workflow_id: 'wf-1',
      amendment_id: 'wam_1',
      applied_against_version: 1,
      previous_expected_calls: 5,
      new_expected_calls: 8,
      previous_max_calls: null,
      new_max_calls: 10,
      reason_provided: null,
      created_at: '2025-01-01T00:00:00.000Z',
    };
    const sig = signer.signB64(canonicalAmendment(amendment));
    expect(verifySignatureB64(signer.publicKeyB64, canonicalAmendment(amendment), sig)).toBe(true);
    expect(verifySignatureB64(signer.publicKeyB64, canonicalAmendment({ ...amendment, new_max_calls: 11 }), sig)).toBe(false);
  });
});
