import { randomUUID } from 'node:crypto';
import { createTestProject, http as httpClient, startTestTollgate } from '../../support/tollgate';
import { waitUntil } from '../../support/wait';
import { complianceSigner } from '../../../src/integrity/keys';
import { issueCheckpoint, LogIntegrityError } from '../../../src/integrity/log';
import { CHECKPOINT_LOCK_CLASS } from '../../../src/db/repositories/integrity-log';
import { verifyConsistency, verifyInclusion } from '../../../src/integrity/merkle';
import { leafHash } from '../../../src/integrity/hashes';
import { openNote, parseCheckpointText, parseVerifierKey } from '../../../src/integrity/note';
import { verifyEventChain } from '../../../src/db/repositories/event-chain-verification';
import { goVerifier, writeEvents } from './helpers';

describe('signed checkpoints, proofs, and a Go verifier', () => {
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof httpClient>;
  const workflowId = `checkpoints-${randomUUID()}`;

  beforeAll(async () => {
    tg = await startTestTollgate();
    call = httpClient(tg.url!);
    // The long-lived checkpoint workflow, as production runs it, on this file's task queue at a 1 s interval.
    await tg.temporal.client.workflow.start('checkpointWorkflow', { workflowId, taskQueue: tg.config.temporal.taskQueue, args: [{ intervalSeconds: 1 }] });
  });
  afterAll(async () => {
    await tg?.temporal.client.workflow.getHandle(workflowId).terminate().catch(() => undefined);
    await tg?.close();
  });

  const latest = (key: string, size: number) =>
    waitUntil(async () => {
      const r = await call('GET', '/v1/integrity/checkpoints/latest', { key });
      return r.status === 200 && r.json.tree_size === size ? r.json : null;
    }, 20_000, 200);

  it('publishes the note verifier key and lists every key with its validity', async () => {
    const pk = await call('GET', '/v1/integrity/checkpoint-public-key');
    expect(pk.status).toBe(200);
    expect(pk.json.note_verifier_key).toMatch(/^tollgate\.compliance\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/);
    expect(parseVerifierKey(pk.json.note_verifier_key).name).toBe('tollgate.compliance');
    const keys = await call('GET', '/v1/compliance/keys');
    expect(keys.status).toBe(200);
    const active = keys.json.data.filter((k: any) => k.purpose === 'checkpoints_and_export_manifests' && k.status === 'active');
    expect(active).toHaveLength(1);
    expect(active[0]).toMatchObject({ key_id: pk.json.key_id, note_verifier_key: pk.json.note_verifier_key, valid_until: null });
    expect(keys.json.data.some((k: any) => k.purpose === 'permit_binding')).toBe(true);
    // Stored sealed: the row holds no PKCS#8 key in the clear.
    const { rows } = await tg.db.query('SELECT private_key_sealed FROM compliance_signing_keys WHERE kid = $1', [pk.json.key_id]);
    expect(rows[0].private_key_sealed).toMatch(/^v1\./);
  });

  it('issues a checkpoint after new events; proofs verify; checkpoints are mutually consistent; Go verifies them', async () => {
    const p = await createTestProject(tg.db);
    const vkey = (await call('GET', '/v1/integrity/checkpoint-public-key')).json.note_verifier_key;
    const verifier = parseVerifierKey(vkey);
    await writeEvents(tg.db, p.project.id, 5);
    const c5 = await latest(p.clientKey, 5);
    await writeEvents(tg.db, p.project.id, 3);
    const c8 = await latest(p.clientKey, 8);
    await writeEvents(tg.db, p.project.id, 13);
    const c21 = await latest(p.clientKey, 21);
    const checkpoints = [c5, c8, c21];
    for (const c of checkpoints) {
      const opened = openNote(c.note, verifier);
      expect(opened.ok).toBe(true);
      const body = parseCheckpointText((opened as { text: string }).text);
      expect(body).toMatchObject({ origin: `tollgate.compliance/events/${p.project.id}`, size: c.tree_size });
      expect(body.root.toString('base64')).toBe(c.root_hash);
    }
    // No checkpoint while the log does not grow.
    await new Promise((r) => setTimeout(r, 2500));
    const { rows: stored } = await tg.db.query('SELECT tree_size FROM log_checkpoints WHERE project_id = $1 ORDER BY tree_size', [p.project.id]);
    expect(stored.map((r) => Number(r.tree_size))).toEqual([5, 8, 21]);

    // Every pair of checkpoints is consistent.
    for (const [i, a] of checkpoints.entries()) {
      for (const b of checkpoints.slice(i + 1)) {
        const r = await call('GET', `/v1/integrity/proofs/consistency?first=${a.tree_size}&second=${b.tree_size}`, { key: p.clientKey });
        expect(r.status).toBe(200);
        const proof = r.json.proof.map((h: string) => Buffer.from(h, 'base64'));
        expect(verifyConsistency({ first: a.tree_size, second: b.tree_size, proof }, Buffer.from(a.root_hash, 'base64'), Buffer.from(b.root_hash, 'base64'))).toBe(true);
      }
    }

    // Inclusion of every event in the latest checkpoint, from the event's own bytes.
    const events = (await call('GET', '/v1/governance/events?order=asc&limit=100', { key: p.clientKey })).json.data;
    for (const e of events) {
      const r = await call('GET', `/v1/integrity/proofs/inclusion?event_id=${e.id}`, { key: p.clientKey });
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ position: e.position, leaf_index: e.position - 1, tree_size: 21 });
      expect(leafHash(r.json.leaf).toString('base64')).toBe(r.json.leaf_hash);
      const proof = r.json.proof.map((h: string) => Buffer.from(h, 'base64'));
      expect(verifyInclusion(leafHash(r.json.leaf), { index: r.json.leaf_index, size: 21, proof }, Buffer.from(c21.root_hash, 'base64'))).toBe(true);
    }
    const at8 = await call('GET', `/v1/integrity/proofs/inclusion?position=3&tree_size=8`, { key: p.clientKey });
    expect(verifyInclusion(Buffer.from(at8.json.leaf_hash, 'base64'), { index: 2, size: 8, proof: at8.json.proof.map((h: string) => Buffer.from(h, 'base64')) }, Buffer.from(c8.root_hash, 'base64'))).toBe(true);
    expect((await call('GET', `/v1/integrity/proofs/inclusion?position=3&tree_size=999`, { key: p.clientKey })).status).toBe(400);

    const run = goVerifier();
    if (!run) {
      console.warn('SKIPPED: the Go interoperability check needs `go` on PATH (golang.org/x/mod/sumdb/note, github.com/transparency-dev/merkle)');
      return;
    }
    const target = events[11];
    const incl = (await call('GET', `/v1/integrity/proofs/inclusion?event_id=${target.id}`, { key: p.clientKey })).json;
    const cons = (await call('GET', `/v1/integrity/proofs/consistency?first=8&second=21`, { key: p.clientKey })).json;
    const input = {
      vkey,
      checkpoint: c21.note,
      leaf_b64: Buffer.from(incl.leaf, 'utf8').toString('base64'),
      leaf_index: incl.leaf_index,
      inclusion_proof: incl.proof,
      old_checkpoint: c8.note,
      consistency_proof: cons.proof,
    };
    const ok = run(input);
    expect(ok).toEqual({ status: 0, out: { ok: true, origin: `tollgate.compliance/events/${p.project.id}`, size: 21, key_name: 'tollgate.compliance', inclusion: true, consistency: true, old_size: 8, notes: 0 } });
    // The same program rejects a changed event, a changed checkpoint and a wrong consistency claim.
    const changedLeaf = run({ ...input, leaf_b64: Buffer.from(incl.leaf.replace('"i":', '"j":'), 'utf8').toString('base64') });
    expect(changedLeaf.status).toBe(1);
    expect(changedLeaf.out.error).toMatch(/inclusion/);
    const changedNote = run({ ...input, checkpoint: c21.note.replace('\n21\n', '\n22\n') });
    expect(changedNote.status).toBe(1);
    expect(changedNote.out.error).toMatch(/note\.Open/);
    const wrongOld = run({ ...input, old_checkpoint: c5.note });
    expect(wrongOld.status).toBe(1);
    expect(wrongOld.out.error).toMatch(/consistency/);
  }, 300_000);

  it('concurrent issuers while the log grows never produce two inconsistent checkpoints', async () => {
    const p = await createTestProject(tg.db);
    const signer = await complianceSigner(tg.db, tg.config);
    for (let round = 0; round < 8; round++) {
      // Writers and three issuers at once (plus the running workflow).
      await Promise.all([
        writeEvents(tg.db, p.project.id, 1 + (round % 3)),
        issueCheckpoint(tg.db, signer, p.project.id),
        issueCheckpoint(tg.db, signer, p.project.id),
        issueCheckpoint(tg.db, signer, p.project.id),
      ]);
    }
    await latest(p.clientKey, 15);
    const { rows } = await tg.db.query('SELECT tree_size, root_hash, note FROM log_checkpoints WHERE project_id = $1 ORDER BY tree_size', [p.project.id]);
    expect(rows.length).toBeGreaterThanOrEqual(2);
    const verifier = parseVerifierKey((await call('GET', '/v1/integrity/checkpoint-public-key')).json.note_verifier_key);
    for (const r of rows) expect(openNote(r.note, verifier).ok).toBe(true);
    for (let i = 0; i < rows.length; i++) {
      for (let j = i + 1; j < rows.length; j++) {
        const [a, b] = [Number(rows[i].tree_size), Number(rows[j].tree_size)];
        const res = await call('GET', `/v1/integrity/proofs/consistency?first=${a}&second=${b}`, { key: p.clientKey });
        const proof = res.json.proof.map((h: string) => Buffer.from(h, 'base64'));
        expect([a, b, verifyConsistency({ first: a, second: b, proof }, rows[i].root_hash, rows[j].root_hash)]).toEqual([a, b, true]);
      }
    }
  });

  /**
   * Writes events 5-7 and alters the 6th while holding the project's checkpoint lock, so the running
   * workflow cannot checkpoint them in between; `beforeAlter` runs under the lock too.
   */
  async function alterSixth(projectId: string, beforeAlter?: () => Promise<void>): Promise<string> {
    const holder = await tg.db.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [CHECKPOINT_LOCK_CLASS, projectId]);
      await writeEvents(tg.db, projectId, 3);
      await beforeAlter?.();
      const { rows } = await tg.db.query(`SELECT c.seq FROM event_chain c WHERE c.project_id = $1 AND c.chain_pos = 6`, [projectId]);
      await tg.db.query(`UPDATE events SET metadata = '{"i":999}'::jsonb WHERE seq = $1`, [rows[0].seq]);
      await holder.query('COMMIT');
      return String(rows[0].seq);
    } finally {
      holder.release();
    }
  }

  /**
   * Issues checkpoints until one fails (the running workflow may hold the lock meanwhile; no
   * issuance may succeed); returns the failure, or null after 100 tries.
   */
  async function checkpointFailure(projectId: string): Promise<unknown> {
    const signer = await complianceSigner(tg.db, tg.config);
    for (let i = 0; i < 100; i++) {
      try {
        const r = await issueCheckpoint(tg.db, signer, projectId);
        expect(r).toEqual({ issued: null, reason: 'locked' });
        await new Promise((res) => setTimeout(res, 20));
      } catch (e) {
        return e;
      }
    }
    return null;
  }

  it('signs an event as it was chained: one altered afterwards no longer matches its leaf, and the chain check names it', async () => {
    const p = await createTestProject(tg.db);
    await writeEvents(tg.db, p.project.id, 4);
    await latest(p.clientKey, 4);
    const seq = await alterSixth(p.project.id);
    const c7 = await latest(p.clientKey, 7);

    const altered = (await tg.db.query('SELECT e.id FROM events e WHERE e.seq = $1', [seq])).rows[0].id;
    const r = await call('GET', `/v1/integrity/proofs/inclusion?event_id=${altered}`, { key: p.clientKey });
    expect(r.status).toBe(200);
    const proof = r.json.proof.map((h: string) => Buffer.from(h, 'base64'));
    const root = Buffer.from(c7.root_hash, 'base64');
    // The signed tree holds the event as chained; the event as it is now is not in it.
    expect(JSON.parse(r.json.leaf).metadata).toEqual({ i: 999 });
    expect(verifyInclusion(Buffer.from(r.json.leaf_hash, 'base64'), { index: 5, size: 7, proof }, root)).toBe(true);
    expect(verifyInclusion(leafHash(r.json.leaf), { index: 5, size: 7, proof }, root)).toBe(false);
    expect(leafHash(r.json.leaf.replace('"i":999', '"i":1')).toString('base64')).toBe(r.json.leaf_hash);
    expect(await verifyEventChain(tg.db, p.project.id)).toMatchObject({ ok: false, broken_at_seq: Number(seq) });
  });

  it('refuses to sign over an event chained before leaf hashes were stored and altered since, naming its position', async () => {
    const p = await createTestProject(tg.db);
    await writeEvents(tg.db, p.project.id, 4);
    await latest(p.clientKey, 4);
    await alterSixth(p.project.id, async () => {
      await tg.db.query('UPDATE event_chain SET leaf_hash = NULL WHERE project_id = $1 AND chain_pos > 4', [p.project.id]);
    });
    const err = await checkpointFailure(p.project.id);
    expect(err).toBeInstanceOf(LogIntegrityError);
    expect((err as LogIntegrityError).position).toBe(6);
    expect((err as LogIntegrityError).message).toMatch(/no longer matches its chain hash/);
    const { rows: sizes } = await tg.db.query('SELECT max(tree_size)::int AS n FROM log_checkpoints WHERE project_id = $1', [p.project.id]);
    expect(sizes[0].n).toBe(4);
  });

  it('refuses to sign over a chain whose links were rewritten, naming the position', async () => {
    const p = await createTestProject(tg.db);
    await writeEvents(tg.db, p.project.id, 4);
    await latest(p.clientKey, 4);
    await alterSixth(p.project.id, async () => {
      await tg.db.query(`UPDATE event_chain SET prev_hash = repeat('a', 64) WHERE project_id = $1 AND chain_pos = 7`, [p.project.id]);
    });
    const err = await checkpointFailure(p.project.id);
    expect(err).toBeInstanceOf(LogIntegrityError);
    expect((err as LogIntegrityError).position).toBe(7);
    expect((err as LogIntegrityError).message).toMatch(/prev_hash does not continue the chain/);
  });
});
