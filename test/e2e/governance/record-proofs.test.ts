/**
 * A call through the API is logged as one leaf, its record (`call.recorded`): the inclusion proof
 * of any of its lifecycle events is the record's proof, its leaf the record's canonical bytes, and
 * `integrity verify` reports an edit of the record.
 */
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import { derivedEventId } from '../../../src/executions/lifecycle-events';
import { complianceSigner } from '../../../src/integrity/keys';
import { issueCheckpoint } from '../../../src/integrity/log';
import { verifyInclusion } from '../../../src/integrity/merkle';
import { leafHash } from '../../../src/integrity/hashes';
import { verifyLog } from '../../../src/integrity/verify-log';
import { say, startHarness, type Harness } from '../executions/helpers';

describe('a pipeline call in the signed log', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('proves a lifecycle event by its record leaf; verification names an edited record', async () => {
    const p = await h.project();
    const res = await h.call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('log me'), routing: { provider: 'openai', model: 'gpt-4o-mini' } } });
    expect(res.status).toBe(200);
    const projectId = p.project.id;
    const { rows } = await h.tg.db.query<{ id: string; seq: string }>('SELECT id, seq FROM calls WHERE project_id = $1 AND seq IS NOT NULL', [projectId]);
    expect(rows).toHaveLength(1);
    const [record] = rows;
    await chainAllProjectEvents(h.tg.db, projectId);
    const signer = await complianceSigner(h.tg.db, h.tg.config);
    await issueCheckpoint(h.tg.db, signer, projectId);
    const { rows: link } = await h.tg.db.query<{ chain_pos: string }>('SELECT chain_pos FROM event_chain WHERE seq = $1', [record.seq]);
    const position = Number(link[0].chain_pos);

    const proof = await h.call('GET', `/v1/integrity/proofs/inclusion?event_id=${encodeURIComponent(derivedEventId(record.id, 1))}`, { key: p.clientKey });
    expect(proof.status).toBe(200);
    expect(proof.json).toMatchObject({ object: 'inclusion_proof', event_id: derivedEventId(record.id, 1), position, leaf_index: position - 1 });
    expect(JSON.parse(proof.json.leaf)).toMatchObject({ event_type: 'call.recorded', id: record.id, seq: Number(record.seq) });
    const lh = Buffer.from(proof.json.leaf_hash, 'base64');
    expect(leafHash(proof.json.leaf).equals(lh)).toBe(true);
    const path = proof.json.proof.map((x: string) => Buffer.from(x, 'base64'));
    expect(verifyInclusion(lh, { index: position - 1, size: proof.json.tree_size, proof: path }, Buffer.from(proof.json.root_hash, 'base64'))).toBe(true);
    // By position: the same leaf.
    const byPos = await h.call('GET', `/v1/integrity/proofs/inclusion?position=${position}`, { key: p.clientKey });
    expect(byPos.json.leaf_hash).toBe(proof.json.leaf_hash);
    const missing = await h.call('GET', `/v1/integrity/proofs/inclusion?event_id=${encodeURIComponent(derivedEventId('exec_req_missing', 1))}`, { key: p.clientKey });
    expect(missing.status).toBe(404);

    await expect(verifyLog(h.tg.db, projectId)).resolves.toMatchObject({ ok: true, broken_at_seq: null });
    await h.tg.db.query("UPDATE calls SET status = 'failed' WHERE id = $1", [record.id]);
    const r = await verifyLog(h.tg.db, projectId);
    expect(r).toMatchObject({ ok: false, broken_at_seq: Number(record.seq), events_verified: position - 1 });
    expect(r.failures[0]).toMatch(/call record at seq \d+ no longer matches/);
  }, 60_000);
});
