/**
 * Retention with archives (src/retention/run.ts): records older than the cutoff are archived in the
 * compliance export format, the archive verifies offline from its file, the rows are gone, reads
 * of them answer `404 archived`, the retained log still verifies and takes checkpoints, a second
 * run does nothing, and a run stopped at any step (or whose archive fails its check) deletes
 * nothing it should not and finishes when run again.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readTar } from '../../../src/compliance/tar';
import { verifyExportCommand } from '../../../src/compliance/verify-command';
import { claimIdempotencyKey } from '../../../src/db/repositories/idempotency';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import { derivedEventId } from '../../../src/executions/lifecycle-events';
import { complianceSigner } from '../../../src/integrity/keys';
import { issueCheckpoint } from '../../../src/integrity/log';
import { latestCheckpoint } from '../../../src/db/repositories/integrity-log';
import { verifierKey } from '../../../src/integrity/note';
import { verifyLog } from '../../../src/integrity/verify-log';
import { idInstant } from '../../../src/retention/archived';
import { ArchiveVerificationError } from '../../../src/retention/archive';
import { runRetention } from '../../../src/retention/run';
import { startHarness, type Harness } from '../executions/helpers';
import { goVerifier, makeCalls } from './helpers';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('retention: archive, verify, then delete', () => {
  let h: Harness;
  let archiveDir: string;
  let vkey: string;
  beforeAll(async () => {
    archiveDir = mkdtempSync(join(tmpdir(), 'tollgate-archives-'));
    // Every run of this file goes through the niced retention thread (run-thread.ts).
    h = await startHarness({ ARCHIVE_DIR: archiveDir, RETENTION_NICE: '10' });
    const signer = await complianceSigner(h.tg.db, h.tg.config);
    vkey = verifierKey(signer.keyName, signer.publicKey32);
  });
  afterAll(async () => {
    await h?.close();
  });

  const deps = () => ({ db: h.tg.db, config: h.tg.config });
  const calls = (key: string, n: number) => makeCalls(h, key, n);
  const records = async (projectId: string) =>
    (await h.tg.db.query<{ id: string; permit_id: string; seq: string }>('SELECT id, permit_id, seq FROM calls WHERE project_id = $1 ORDER BY seq', [projectId])).rows;
  /**
   * Issues checkpoints until one covers `size` leaves (a call's record may be written just after
   * its response, and the background round may issue the checkpoint first); returns its size.
   */
  const checkpointSize = async (projectId: string, size: number) => {
    const signer = await complianceSigner(h.tg.db, h.tg.config);
    const latest = async () => Number((await latestCheckpoint(h.tg.db, projectId))?.tree_size ?? 0);
    for (let i = 0; i < 100 && (await latest()) < size; i++) {
      await chainAllProjectEvents(h.tg.db, projectId);
      await issueCheckpoint(h.tg.db, signer, projectId);
      await pause(100);
    }
    return latest();
  };
  const count = async (sql: string, projectId: string) => Number((await h.tg.db.query<{ n: string }>(sql, [projectId])).rows[0].n);

  it('archives the records before the cutoff, deletes them, answers 404 archived, and the log still verifies', async () => {
    const p = await h.project();
    const projectId = p.project.id;
    await calls(p.clientKey, 20);
    await claimIdempotencyKey(h.tg.db, { projectId, scope: 'test', key: 'old', requestHash: 'h', retentionHours: 1 });
    await pause(20);
    const cutoff = new Date();
    await pause(20);
    await calls(p.clientKey, 5);
    await claimIdempotencyKey(h.tg.db, { projectId, scope: 'test', key: 'new', requestHash: 'h', retentionHours: 1 });
    const before = await records(projectId);
    expect(before).toHaveLength(25);

    const report = await runRetention(deps(), { projectId, before: cutoff, now: new Date() });
    expect(report.projects).toHaveLength(1);
    const [run] = report.projects;
    expect(run).toMatchObject({ project_id: projectId, outcome: 'archived' });
    const archive = run.archive!;
    // 20 leaves precede the cutoff; the archive ends on a multiple of 16 leaves.
    expect(archive).toMatchObject({ status: 'completed', log_range: { first_index: 0, last_index: 15 } });
    expect(archive.path.startsWith(join(archiveDir, projectId))).toBe(true);
    expect(archive.deleted).toMatchObject({ executions: 16, event_chain: 16, permits: 16, idempotency_keys: 1 });
    // The Overview counts the calls that remain: the time before the cutoff now comes from the records.
    const overview = (await h.call('GET', '/v1/metrics/calls', { key: p.clientKey })).json;
    expect(overview.totals.calls).toBe(9);
    expect(await count(`SELECT count(*) AS n FROM call_rollup WHERE project_id = $1 AND start + make_interval(secs => width) <= (SELECT started_at FROM call_rollup_starts WHERE project_id = $1)`, projectId)).toBe(0);
    // Spend's usage likewise: its rollup starts at the cutoff, the time before it read from the permits that remain.
    const { rows: usageStart } = await h.tg.db.query<{ started_at: Date }>('SELECT started_at FROM usage_rollup_starts WHERE project_id = $1', [projectId]);
    expect(usageStart.map((r) => r.started_at)).toEqual([cutoff]);

    // The archive verifies offline from its file alone, with the published key.
    expect(existsSync(archive.path)).toBe(true);
    const verified = verifyExportCommand(archive.path, vkey);
    expect(verified).toMatchObject({ ok: true, project_id: projectId, events_verified: 16, failures: [] });
    const files = readTar(readFileSync(archive.path));
    const archivedLines = files.get('events.ndjson')!.toString().trim().split('\n');
    expect(archivedLines.map((l) => JSON.parse(l).id)).toEqual(before.slice(0, 16).map((r) => r.id));

    // And through Go's signed-note and Merkle libraries.
    const go = goVerifier();
    if (!go) console.warn('SKIPPED: the Go check of the archive needs `go` on PATH');
    else {
      const proofs = files.get('proofs.ndjson')!.toString().trim().split('\n').map((l) => JSON.parse(l));
      const out = go({
        vkey,
        checkpoint: files.get('checkpoint.note')!.toString(),
        leaf_b64: Buffer.from(archivedLines[7]).toString('base64'),
        leaf_index: proofs[7].index,
        inclusion_proof: proofs[7].proof,
        notes: [files.get('manifest.note')!.toString()],
      });
      expect(out).toMatchObject({ status: 0, out: { ok: true, inclusion: true, notes: 1 } });
    }

    // The rows are gone; the later ones stay.
    const after = await records(projectId);
    expect(after.map((r) => r.id)).toEqual(before.slice(16).map((r) => r.id));
    expect(await count('SELECT count(*) AS n FROM permits WHERE project_id = $1', projectId)).toBe(9);
    expect(await count('SELECT min(chain_pos) AS n FROM event_chain WHERE project_id = $1', projectId)).toBe(17);
    expect((await h.tg.db.query('SELECT key FROM idempotency_keys WHERE project_id = $1', [projectId])).rows.map((r) => r.key)).toEqual(['new']);

    // Reads of an aged-out record answer 404 archived with the archive's id.
    const gone = before[3];
    expect(idInstant(gone.id)!.getTime()).toBeLessThan(cutoff.getTime());
    for (const path of [`/v1/executions/${gone.id}`, `/v1/calls/${gone.id}`, `/v1/requests/${gone.id}/timeline`, `/v1/permits/${gone.permit_id}`]) {
      const res = await h.call('GET', path, { key: p.clientKey });
      expect({ path, status: res.status, code: res.json.error?.code }).toEqual({ path, status: 404, code: 'archived' });
      expect(res.json.error.details).toMatchObject({ archive_id: archive.id });
    }
    const kept = after[0];
    expect((await h.call('GET', `/v1/executions/${kept.id}`, { key: p.clientKey })).status).toBe(200);
    expect((await h.call('GET', `/v1/permits/${kept.permit_id}`, { key: p.clientKey })).status).toBe(200);
    const unknown = await h.call('GET', '/v1/executions/exec_req_00000000000070008000000000000000', { key: p.clientKey });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe('not_found');
    // Another project's key learns nothing of this archive.
    const other = await h.project();
    expect((await h.call('GET', `/v1/executions/${gone.id}`, { key: other.clientKey })).json.error.code).toBe('not_found');

    // The retained log verifies from the archive's head, and takes new checkpoints.
    await expect(verifyLog(h.tg.db, projectId)).resolves.toMatchObject({ ok: true, archived_through: 16, archive_id: archive.id, events_verified: 9, checkpoint: { root: 'matches_chain', signature: 'valid' } });
    await calls(p.clientKey, 2);
    await chainAllProjectEvents(h.tg.db, projectId);
    expect(await checkpointSize(projectId, 27)).toBe(27);
    await expect(verifyLog(h.tg.db, projectId)).resolves.toMatchObject({ ok: true, events_verified: 11, checkpoint: { tree_size: 27, root: 'matches_chain' } });
    const proof = await h.call('GET', '/v1/integrity/proofs/inclusion?position=20', { key: p.clientKey });
    expect(proof.status).toBe(200);
    // An archived position's proof is the archive's.
    for (const q of ['position=3', `event_id=${encodeURIComponent(derivedEventId(gone.id, 1))}`]) {
      const res = await h.call('GET', `/v1/integrity/proofs/inclusion?${q}`, { key: p.clientKey });
      expect({ q, status: res.status, code: res.json.error?.code, archive: res.json.error?.details?.archive_id }).toEqual({ q, status: 404, code: 'archived', archive: archive.id });
    }

    // A second run with the same cutoff does nothing.
    const again = await runRetention(deps(), { projectId, before: cutoff, now: new Date() });
    expect(again.projects[0]).toMatchObject({ outcome: 'nothing_to_archive', archive: null });
    expect(await records(projectId)).toHaveLength(11);
  }, 180_000);

  it('deletes nothing when the archive fails its check, and a run stopped after the archive or mid-deletion finishes when run again', async () => {
    const p = await h.project();
    const projectId = p.project.id;
    await calls(p.clientKey, 18);
    await pause(20);
    const cutoff = new Date();
    const ids = (await records(projectId)).map((r) => r.id);

    // The file is damaged between its writing and its check: nothing is deleted.
    await expect(
      runRetention(deps(), {
        projectId,
        before: cutoff,
        now: new Date(),
        onStep: (step) => {
          if (step !== 'archived') return;
          const file = readdirArchive(archiveDir, projectId);
          const bytes = readFileSync(file);
          const at = bytes.indexOf('call.recorded');
          bytes[at] = 'C'.charCodeAt(0);
          writeFileSync(file, bytes);
        },
      }),
    ).rejects.toThrow(ArchiveVerificationError);
    expect(await records(projectId)).toHaveLength(18);
    expect((await h.tg.db.query('SELECT status FROM archives WHERE project_id = $1', [projectId])).rows).toEqual([{ status: 'building' }]);

    // Stopped right after the archive is written (before its check): still nothing deleted.
    const stop = (at: string) => (step: string) => {
      if (step === at) throw new Error(`stopped at ${at}`);
    };
    await expect(runRetention(deps(), { projectId, before: cutoff, now: new Date(), onStep: stop('archived') })).rejects.toThrow('stopped at archived');
    expect(await records(projectId)).toHaveLength(18);

    // Stopped after the first batch of deletions: the archive verified, some rows gone, the log verifies.
    await expect(runRetention(deps(), { projectId, before: cutoff, now: new Date(), batchSize: 5, onStep: stop('batch') })).rejects.toThrow('stopped at batch');
    expect(await records(projectId)).toHaveLength(13);
    const { rows: open } = await h.tg.db.query<{ id: string; status: string }>('SELECT id, status FROM archives WHERE project_id = $1', [projectId]);
    expect(open).toEqual([{ id: expect.any(String), status: 'verified' }]);
    // The window starts no later than the first call's id was made (before any row of the call).
    const { rows: windows } = await h.tg.db.query<{ window_since: Date }>('SELECT window_since FROM archives WHERE id = $1', [open[0].id]);
    expect(windows[0].window_since.getTime()).toBeLessThanOrEqual(idInstant(ids[0])!.getTime());
    await expect(verifyLog(h.tg.db, projectId)).resolves.toMatchObject({ ok: true, archived_through: 16 });
    expect((await h.call('GET', `/v1/executions/${ids[0]}`, { key: p.clientKey })).json.error).toMatchObject({ code: 'archived', details: { archive_id: open[0].id } });

    // Run again: it resumes that archive (whatever the new cutoff) and completes it.
    const done = await runRetention(deps(), { projectId, before: new Date(), now: new Date(), batchSize: 5 });
    expect(done.projects[0]).toMatchObject({ outcome: 'archived', archive: { id: open[0].id, status: 'completed', log_range: { first_index: 0, last_index: 15 } } });
    expect((await records(projectId)).map((r) => r.id)).toEqual(ids.slice(16));
    expect(verifyExportCommand(done.projects[0].archive!.path, vkey)).toMatchObject({ ok: true, events_verified: 16 });
    await expect(verifyLog(h.tg.db, projectId)).resolves.toMatchObject({ ok: true, archived_through: 16, events_verified: 2 });
    expect((await h.tg.db.query('SELECT count(*)::int AS n FROM compliance_exports WHERE project_id = $1', [projectId])).rows[0].n).toBe(0);
  }, 180_000);

  it('archives in a thread of nice RETENTION_NICE while the calling thread keeps its priority', async () => {
    expect(h.tg.config.retention.nice).toBe(10);
    const p = await h.project();
    const projectId = p.project.id;
    await calls(p.clientKey, 16);
    // Each thread's nice value (field 19 of /proc/<pid>/task/<tid>/stat, after the name's ")"); a
    // thread that exits between the listing and the read is left out.
    const nices = () =>
      readdirSync('/proc/self/task').flatMap((tid) => {
        let stat: string;
        try {
          stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
          throw err;
        }
        return [{ tid: Number(tid), nice: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]) }];
      });
    const own = nices().find((t) => t.tid === process.pid)!.nice;
    const seen: number[][] = [];
    const report = await runRetention(deps(), {
      projectId,
      before: new Date(),
      now: new Date(),
      // A step waits for this callback: the retention thread is alive, between two of its steps.
      onStep: () => {
        seen.push(nices().map((t) => t.nice));
      },
    });
    expect(report.projects[0]).toMatchObject({ outcome: 'archived', archive: { status: 'completed' } });
    expect(seen.length).toBeGreaterThan(0);
    expect(own).toBeLessThan(10);
    for (const threads of seen) expect(threads).toContain(10);
    expect(nices().find((t) => t.tid === process.pid)!.nice).toBe(own);
  }, 120_000);

  it('a project sets its own retention with PATCH; bad values are 400 validation_error naming the field', async () => {
    const p = await h.project();
    const projectId = p.project.id;
    for (const bad of [0, -1, 1.5, 'x', 40000]) {
      const res = await h.call('PATCH', `/v1/projects/${projectId}`, { key: p.adminKey, body: { retention_days: bad } });
      expect(res.status).toBe(400);
      expect(res.json.error.code).toBe('validation_error');
      expect(res.json.error.details.issues[0].path).toBe('retention_days');
    }
    const set = await h.call('PATCH', `/v1/projects/${projectId}`, { key: p.adminKey, body: { retention_days: 30 } });
    expect(set.status).toBe(200);
    expect(set.json).toMatchObject({ id: projectId, retention_days: 30 });
    expect((await h.call('GET', `/v1/projects/${projectId}`, { key: p.adminKey })).json.retention_days).toBe(30);

    // Its records age out 30 days after they were made: a run 31 days from now archives them.
    await calls(p.clientKey, 16);
    const run = await runRetention(deps(), { projectId, now: new Date(Date.now() + 31 * 86_400_000) });
    expect(run.projects[0]).toMatchObject({ outcome: 'archived', archive: { status: 'completed', log_range: { first_index: 0, last_index: 15 } } });
    expect(await records(projectId)).toHaveLength(0);
    // Every leaf is archived: the next checkpoint continues from the archive's head hash.
    await calls(p.clientKey, 1);
    await chainAllProjectEvents(h.tg.db, projectId);
    expect(await checkpointSize(projectId, 17)).toBe(17);
    await expect(verifyLog(h.tg.db, projectId)).resolves.toMatchObject({ ok: true, archived_through: 16, events_verified: 1, checkpoint: { tree_size: 17, root: 'matches_chain' } });

    const reset = await h.call('PATCH', `/v1/projects/${projectId}`, { key: p.adminKey, body: { retention_days: null } });
    expect(reset.json.retention_days).toBeNull();
    // Without its own value and without RETENTION_DAYS, nothing ages out.
    expect((await runRetention(deps(), { projectId, now: new Date(Date.now() + 365 * 86_400_000) })).projects[0].outcome).toBe('no_retention');
  }, 120_000);

  it('runs as a round of the maintenance workflow', async () => {
    const handle = await h.tg.temporal.client.workflow.start('retentionWorkflow', {
      taskQueue: h.tg.config.temporal.taskQueue,
      workflowId: `retention-test-${Date.now()}`,
      args: [{ intervalSeconds: 1, roundsPerRun: 1 }],
    });
    const first = h.tg.temporal.client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId);
    const deadline = Date.now() + 60_000;
    while ((await first.describe()).status.name === 'RUNNING' && Date.now() < deadline) await pause(200);
    expect((await first.describe()).status.name).toBe('CONTINUED_AS_NEW');
    await h.tg.temporal.client.workflow.getHandle(handle.workflowId).terminate('test done');
  }, 90_000);
});

function readdirArchive(dir: string, projectId: string): string {
  const names = readdirSync(join(dir, projectId)).filter((n) => n.endsWith('.tar'));
  return join(dir, projectId, names[0]);
}
