/**
 * A session outlives its worker: the API process and the worker are separate; the worker is shut
 * down mid-session and a new one started on the same task queue. The session keeps its counters,
 * its ceiling and its idle timer.
 */
import { randomUUID } from 'node:crypto';
import { createTestProject, http, startTestTollgate } from '../../support/tollgate';
import { waitUntil } from '../../support/wait';

jest.setTimeout(180_000);

it('keeps deciding turns across a worker restart, with the same counters and ceiling', async () => {
  const queue = `test-${randomUUID()}`;
  const api = await startTestTollgate({ role: 'api', env: { TEMPORAL_TASK_QUEUE: queue } });
  let worker = await startTestTollgate({ role: 'worker', env: { TEMPORAL_TASK_QUEUE: queue } });
  try {
    const call = http(api.url!);
    const p = await createTestProject(api.db);
    const s = (await call('POST', '/v1/sessions', { key: p.clientKey, body: { model: 'gpt-4o-realtime-preview', max_turns: 4, idle_timeout_seconds: 30 } })).json;
    const turn = (i: number) => call('POST', `/v1/sessions/${s.id}/turns`, { key: p.clientKey, body: { turn_id: `t${i}`, text: `turn ${i}`, estimated_output_tokens: 5 } });
    expect((await turn(1)).json.turn_number).toBe(1);
    expect((await turn(2)).json.turn_number).toBe(2);

    await worker.close();
    // While no worker runs, a turn waits (its Update is accepted once a worker polls again).
    const pending = turn(3);
    await new Promise((r) => setTimeout(r, 1000));
    worker = await startTestTollgate({ role: 'worker', env: { TEMPORAL_TASK_QUEUE: queue } });

    expect((await pending).json).toMatchObject({ decision: 'allow', turn_number: 3 });
    expect((await turn(4)).json.turn_number).toBe(4);
    expect((await turn(5)).json.reason_code).toBe('session.max_turns_reached');
    const ended = await call('POST', `/v1/sessions/${s.id}/end`, { key: p.clientKey, body: {} });
    expect(ended.json).toMatchObject({ status: 'ended', usage: { turns: 4 } });
    const types = await waitUntil(async () => {
      const r = (await api.db.query('SELECT event_type FROM events WHERE session_id = $1 ORDER BY seq', [s.id])).rows.map((x) => x.event_type);
      return r.includes('session.ended') ? r : null;
    });
    expect(types.filter((t) => t === 'session.turn_allowed')).toHaveLength(4);
  } finally {
    await worker.close();
    await api.close();
  }
});
