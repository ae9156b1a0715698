/**
 * `npm run cli -- integrity verify --project <id>` (src/integrity/verify-log.ts): the events against
 * the chain and their stored leaf hashes, the latest checkpoint against the chain. On a database of
 * its own: the tests edit chain rows, which the checkpoint rounds of other test files' Tollgates
 * would otherwise meet.
 */
import { runCli } from '../../../src/cli';
import { appendEvents } from '../../../src/db/repositories/events';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import { createProject } from '../../../src/db/repositories/projects';
import { complianceSigner } from '../../../src/integrity/keys';
import { issueCheckpoint } from '../../../src/integrity/log';
import { verifyLog } from '../../../src/integrity/verify-log';
import { ownDatabasePool } from '../../support/own-database';

describe('verifying a project log in place', () => {
  const own = ownDatabasePool('verify_log');

  /** A project with `n` chained events and a checkpoint of them; returns it and the seq at each position. */
  async function checkpointedLog(n: number) {
    const project = await createProject(own.db, { name: 'verify', plan: 'production' });
    await appendEvents(own.db, Array.from({ length: n }, (_, i) => ({ projectId: project.id, eventType: 'permit.allowed', source: 'test', phase: 'permit', metadata: { i } })));
    await chainAllProjectEvents(own.db, project.id);
    const signer = await complianceSigner(own.db, { env: 'test', masterKey: undefined, databaseUrl: own.url });
    expect(Number((await issueCheckpoint(own.db, signer, project.id)).issued?.tree_size)).toBe(n);
    const { rows } = await own.db.query<{ seq: string }>('SELECT seq FROM event_chain WHERE project_id = $1 ORDER BY chain_pos', [project.id]);
    return { projectId: project.id, seqAt: (pos: number) => Number(rows[pos - 1].seq) };
  }

  it('passes an untouched log, through the CLI as through the function', async () => {
    const { projectId } = await checkpointedLog(5);
    const r = await verifyLog(own.db, projectId);
    expect(r).toMatchObject({ object: 'log_verification', ok: true, events_verified: 5, broken_at_seq: null, failures: [] });
    expect(r.checkpoint).toMatchObject({ tree_size: 5, signature: 'valid', root: 'matches_chain' });
    const cli = await runCli(['integrity', 'verify', '--project', projectId], { ...process.env, DATABASE_URL: own.url });
    expect(cli).toEqual(r);
    await expect(runCli(['integrity', 'verify', '--project', 'prj_missing'], { ...process.env, DATABASE_URL: own.url })).rejects.toThrow(/not found/);
  });

  it('names an event edited after it was logged; the checkpoint still signs the chain as logged', async () => {
    const { projectId, seqAt } = await checkpointedLog(5);
    await own.db.query(`UPDATE events SET metadata = '{"i":99}'::jsonb WHERE seq = $1`, [seqAt(3)]);
    const r = await verifyLog(own.db, projectId);
    expect(r).toMatchObject({ ok: false, events_verified: 2, broken_at_seq: seqAt(3) });
    expect(r.checkpoint).toMatchObject({ signature: 'valid', root: 'matches_chain' });
    expect(r.failures).toEqual([expect.stringMatching(/seq \d+ no longer matches the hash chain/)]);
  });

  it('names an event whose stored leaf hash was changed, and a checkpoint that no longer signs the chain', async () => {
    const { projectId, seqAt } = await checkpointedLog(5);
    await own.db.query(`UPDATE event_chain SET leaf_hash = sha256('forged'::bytea) WHERE seq = $1`, [seqAt(4)]);
    const r = await verifyLog(own.db, projectId);
    expect(r).toMatchObject({ ok: false, events_verified: 3, broken_at_seq: seqAt(4) });
    expect(r.checkpoint).toMatchObject({ signature: 'valid', root: 'differs' });
  });

  it('reports a checkpoint whose stored root or signature was changed', async () => {
    const changedRoot = await checkpointedLog(4);
    await own.db.query(`UPDATE log_checkpoints SET root_hash = sha256('other'::bytea) WHERE project_id = $1`, [changedRoot.projectId]);
    const r = await verifyLog(own.db, changedRoot.projectId);
    expect(r).toMatchObject({ ok: false, events_verified: 4, broken_at_seq: null });
    expect(r.checkpoint).toMatchObject({ signature: 'invalid', root: 'differs' });

    const changedSignature = await checkpointedLog(4);
    const { rows } = await own.db.query<{ note: string }>('SELECT note FROM log_checkpoints WHERE project_id = $1', [changedSignature.projectId]);
    const lines = rows[0].note.split('\n');
    const sigLine = lines.findIndex((l) => l.startsWith('\u2014 '));
    const [dash, name, b64] = lines[sigLine].split(' ');
    const sig = Buffer.from(b64, 'base64');
    sig[sig.length - 1] ^= 0xff;
    lines[sigLine] = [dash, name, sig.toString('base64')].join(' ');
    await own.db.query('UPDATE log_checkpoints SET note = $2 WHERE project_id = $1', [changedSignature.projectId, lines.join('\n')]);
    const s = await verifyLog(own.db, changedSignature.projectId);
    expect(s.ok).toBe(false);
    expect(s.checkpoint).toMatchObject({ signature: 'invalid', root: 'matches_chain' });
    expect(s.failures).toEqual([expect.stringMatching(/signed note does not verify/)]);
  });

  it('reports a chain row removed before the checkpoint size', async () => {
    const { projectId, seqAt } = await checkpointedLog(5);
    await own.db.query('DELETE FROM event_chain WHERE seq = $1', [seqAt(3)]);
    const r = await verifyLog(own.db, projectId);
    expect(r.ok).toBe(false);
    expect(r.checkpoint).toMatchObject({ root: 'chain_broken' });
    expect(r.failures).toContainEqual(expect.stringMatching(/chain position 3 is missing/));
  });

  it('reports a chain whose links were rewritten before the checkpoint size', async () => {
    const { projectId, seqAt } = await checkpointedLog(5);
    await own.db.query(`UPDATE event_chain SET prev_hash = repeat('b', 64) WHERE seq = $1`, [seqAt(2)]);
    const r = await verifyLog(own.db, projectId);
    expect(r).toMatchObject({ ok: false, broken_at_seq: seqAt(2) });
    expect(r.checkpoint).toMatchObject({ root: 'chain_broken' });
    expect(r.failures[1]).toMatch(/chain position 2: prev_hash does not continue the chain/);
  });
});
