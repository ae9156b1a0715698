/**
 * The jobs routes (src/api/routes/jobs.ts, src/jobs/service.ts): Idempotency-Key, the list and its
 * filters, cancellation, the retry_on_interrupt opt-in as shown, and validation.
 */
import { createTestProject } from '../../support/tollgate';
import { waitUntil } from '../../support/wait';
import { say } from '../executions/helpers';
import { jobsSuite } from './helpers';

describe('async jobs (POST /v1/jobs): the jobs routes', () => {
  const suite = jobsSuite();
  const { call, submit, finished } = suite;

  it('Idempotency-Key: the same payload answers the same job; another payload is a 409', async () => {
    const p = await createTestProject(suite.tg.db);
    const body = { operation: 'generate.text', messages: say('idempotent job') };
    const first = await submit(p, body, { 'idempotency-key': 'job-key-1' });
    const again = await submit(p, body, { 'idempotency-key': 'job-key-1' });
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(again.json.id).toBe(first.json.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await submit(p, { ...body, metadata: { x: 'y' } }, { 'idempotency-key': 'job-key-1' });
    expect(other.status).toBe(409);
    expect(other.json.error).toMatchObject({ code: 'idempotency_conflict', details: { idempotency_key: 'job-key-1' } });
    await finished(p, first.json.id);
    const { rows } = await suite.tg.db.query('SELECT count(*)::int AS n FROM jobs WHERE project_id = $1', [p.project.id]);
    expect(rows[0].n).toBe(1);
  });

  it('lists jobs newest first with filters and a cursor', async () => {
    const p = await createTestProject(suite.tg.db);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await submit(p, { operation: 'generate.text', messages: say(`list ${i}`) })).json.id);
    ids.push((await submit(p, { operation: 'embed.text', inputs: [{ type: 'text', text: 'e' }], routing: { provider: 'openai' } })).json.id);
    for (const id of ids) await finished(p, id);
    const page1 = await call('GET', '/v1/jobs?limit=3', { key: p.clientKey });
    expect(page1.status).toBe(200);
    expect(page1.json.object).toBe('list');
    expect(page1.json.data.map((j: any) => j.id)).toEqual([...ids].reverse().slice(0, 3));
    const page2 = await call('GET', `/v1/jobs?limit=3&cursor=${page1.json.next_cursor}`, { key: p.clientKey });
    expect(page2.json.data.map((j: any) => j.id)).toEqual([ids[0]]);
    expect(page2.json.next_cursor).toBeNull();
    const embeds = await call('GET', '/v1/jobs?operation=embed.text&status=completed', { key: p.clientKey });
    expect(embeds.json.data.map((j: any) => j.id)).toEqual([ids[3]]);
    const none = await call('GET', '/v1/jobs?status=failed', { key: p.clientKey });
    expect(none.json.data).toEqual([]);
    expect((await call('GET', '/v1/jobs?cursor=nope', { key: p.clientKey })).status).toBe(400);
    expect((await call('GET', '/v1/jobs?status=bogus', { key: p.clientKey })).status).toBe(400);
    // Another project sees none of them.
    const q = await createTestProject(suite.tg.db);
    expect((await call('GET', '/v1/jobs', { key: q.clientKey })).json.data).toEqual([]);
    expect((await call('GET', `/v1/jobs/${ids[0]}`, { key: q.clientKey })).status).toBe(404);
  });

  it('cancels a queued job and a running one; a finished job is not cancellable', async () => {
    const p = await createTestProject(suite.tg.db);
    // Two slow jobs take the project's two slots; the third waits queued. 20 s at the provider: both
    // still hold their slots when the third is cancelled, and the first's cancel (it reaches the
    // dispatch on a heartbeat, up to 4 s later) lands before it answers, even on a stalled machine.
    const slow: string[] = [];
    for (let i = 0; i < 2; i++) slow.push((await submit(p, { operation: 'generate.text', messages: say(`[[emulator:latency_ms=20000]] slow ${i}`), routing: { provider: 'anthropic' } })).json.id);
    // Both slots taken before the third is submitted (workflows need not start in submission order).
    await waitUntil(async () => {
      const states = await Promise.all(slow.map(async (id) => (await call('GET', `/v1/jobs/${id}`, { key: p.clientKey })).json.status));
      return states.every((s) => s === 'processing');
    });
    const queued = (await submit(p, { operation: 'generate.text', messages: say('waits') })).json.id;
    expect((await call('GET', `/v1/jobs/${queued}`, { key: p.clientKey })).json.status).toBe('queued');

    const c1 = await call('POST', `/v1/jobs/${queued}/cancel`, { key: p.clientKey });
    expect(c1.status).toBe(200);
    expect(c1.json).toMatchObject({ status: 'cancelled', cancel_requested: true, result: null });

    await waitUntil(async () => {
      // The dispatch started: its start is kept on the job before the provider is called.
      const { rows } = await suite.tg.db.query('SELECT 1 FROM jobs WHERE id = $1 AND dispatch IS NOT NULL', [slow[0]]);
      return rows.length > 0;
    });
    const c2 = await call('POST', `/v1/jobs/${slow[0]}/cancel`, { key: p.clientKey });
    expect([200, 202]).toContain(c2.status);
    const cancelled = await finished(p, slow[0]);
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.result.status).toBe('failed');
    // Aborted mid-dispatch: recorded failed (the emulator would have answered with a completion).
    expect(cancelled.error.code).not.toBe('job_engine_error');
    const { rows } = await suite.tg.db.query('SELECT count(*)::int AS n FROM calls WHERE id = $1', [cancelled.request_id]);
    expect(rows[0].n).toBe(1);

    const done = await finished(p, slow[1], 60_000);
    expect(done.status).toBe('completed');
    const c3 = await call('POST', `/v1/jobs/${slow[1]}/cancel`, { key: p.clientKey });
    expect(c3.status).toBe(409);
    expect(c3.json.error.code).toBe('job_not_cancellable');
    const tl = await call('GET', `/v1/requests/${(await call('GET', `/v1/jobs/${queued}`, { key: p.clientKey })).json.request_id}/timeline`, { key: p.clientKey });
    const queuedTypes: string[] = tl.json.events.map((e: any) => e.event_type);
    // job.queued is there when its workflow took it before the cancel; nothing follows job.cancelled.
    expect(queuedTypes.filter((t) => t !== 'job.queued')).toEqual(['job.submitted', 'job.cancelled']);
    expect(queuedTypes[queuedTypes.length - 1]).toBe('job.cancelled');
  }, 120_000);

  it('retry_on_interrupt: the opt-in is shown by the submission, GET /v1/jobs/{id} and the list; the default is false', async () => {
    const p = await createTestProject(suite.tg.db);
    const opted = await submit(p, { operation: 'generate.text', messages: say('opted in'), routing: { provider: 'anthropic' }, retry_on_interrupt: true });
    const plain = await submit(p, { operation: 'generate.text', messages: say('default'), routing: { provider: 'anthropic' } });
    expect(opted.json.retry_on_interrupt).toBe(true);
    expect(plain.json.retry_on_interrupt).toBe(false);
    expect((await finished(p, opted.json.id)).retry_on_interrupt).toBe(true);
    expect((await finished(p, plain.json.id)).retry_on_interrupt).toBe(false);
    const list = await call('GET', '/v1/jobs', { key: p.clientKey });
    expect(Object.fromEntries(list.json.data.map((j: any) => [j.id, j.retry_on_interrupt]))).toEqual({ [opted.json.id]: true, [plain.json.id]: false });
  });

  it('validates the body like an execution request, plus metadata; no stream mode', async () => {
    const p = await createTestProject(suite.tg.db);
    const stream = await submit(p, { operation: 'generate.text', mode: 'stream', messages: say('x') });
    expect(stream.status).toBe(400);
    expect(stream.json.error.details.issues[0].path).toBe('mode');
    const meta = await submit(p, { operation: 'generate.text', messages: say('x'), metadata: { n: 1 } });
    expect(meta.status).toBe(400);
    expect(meta.json.error.details.issues[0].path).toBe('metadata.n');
    const both = await submit(p, { operation: 'generate.text' });
    expect(both.status).toBe(400);
    expect((await call('POST', '/v1/jobs', { body: { operation: 'generate.text', messages: say('x') } })).status).toBe(401);
    expect((await call('GET', '/v1/jobs/job_nope', { key: p.clientKey })).status).toBe(404);
  });
});
