/**
 * The process serving a governed call dies mid-dispatch (SIGKILL). Its in-flight marker (on the permit) stays; the
 * reconciliation workflow closes the call once its dispatch deadline passes: recorded failed
 * (dispatch_interrupted), reservation released (the estimated input settled), request.errored on
 * the timeline, the Idempotency-Key answering with that result. The provider is not called again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { emulatorEnv, say, sentRequest } from './helpers';
import { findCallRecordById } from '../../../src/db/repositories/call-records';
import { requestTimeline } from '../../../src/db/repositories/log-events';
import { startEmulator, EmulatorHandle } from '../../../emulator/server';
import { RECONCILIATION_WORKFLOW_ID } from '../../../workflows/reconciliation';
import { createTestProject, http, startTestTollgate, TestProject } from '../../support/tollgate';
import { waitUntil as waitFor } from '../../support/wait';
import { SOURCE_NODE_ARGS } from '../../../scripts/lib/source-node-args';

jest.setTimeout(120_000);


describe('a Tollgate process killed mid-call', () => {
  let emu: EmulatorHandle;
  let survivor: Awaited<ReturnType<typeof startTestTollgate>>;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    emu = await startEmulator({ port: 0 });
    // Dispatch deadline = provider timeout (30 s) + 5 s: long enough that a stalled machine cannot let
    // a call end (answered or timed out) before the test kills its process.
    env = { ...emulatorEnv(emu.url), PROVIDER_TIMEOUT_MS: '30000', TEMPORAL_TASK_QUEUE: `crash-${Date.now()}` };
    survivor = await startTestTollgate({ env });
    await survivor.temporal.client.workflow.start('reconciliationWorkflow', {
      workflowId: `${RECONCILIATION_WORKFLOW_ID}-${env.TEMPORAL_TASK_QUEUE}`,
      taskQueue: env.TEMPORAL_TASK_QUEUE!,
      args: [{ intervalSeconds: 1 }],
    });
  });
  afterAll(async () => {
    await survivor?.temporal.client.workflow.getHandle(`${RECONCILIATION_WORKFLOW_ID}-${env.TEMPORAL_TASK_QUEUE}`).terminate().catch(() => undefined);
    await survivor?.close();
    await emu?.close();
  });

  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) c.kill('SIGKILL');
  });

  async function startDoomed(): Promise<{ child: ChildProcess; url: string }> {
    const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, path.join(__dirname, 'api-process.ts')], {
      env: { ...process.env, TOLLGATE_TEST_ENV: JSON.stringify(env) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (d) => {
        const m = /ready (\S+)/.exec(String(d));
        if (m) resolve(m[1]);
      });
      child.once('exit', (code) => reject(new Error(`api process exited ${code}`)));
    });
    return { child, url };
  }

  async function state(p: TestProject, executionId: string) {
    const db = survivor.db;
    const ev = (await requestTimeline(db, p.project.id, executionId)).events;
    const permit = await db.query('SELECT reservation_state, reserved_cost_micros, actual_cost_micros FROM permits WHERE request_id = $1', [executionId]);
    const spend = await db.query("SELECT reserved_micros, settled_micros FROM spend_counters WHERE project_id = $1 AND period_kind = 'month'", [p.project.id]);
    const inflight = await db.query('SELECT 1 FROM permits WHERE request_id = $1 AND closing IS NOT NULL', [executionId]);
    return { events: ev.map((r) => r.event_type), permit: permit.rows[0], spend: spend.rows[0], inflight: inflight.rowCount };
  }

  async function expectClosed(p: TestProject, executionId: string) {
    const db = survivor.db;
    // The envelope as the API answers it (the row stores its compact part: findCallRecordById rebuilds it).
    // Reconciliation closes it after the dispatch deadline (35 s after the call started).
    const row = await waitFor(async () => findCallRecordById(db, executionId), 90_000);
    expect(row.envelope).toMatchObject({ id: executionId, status: 'failed', status_code: 502, error: { code: 'dispatch_interrupted' } });
    expect(row.envelope.usage).toMatchObject({ output_tokens: 0, estimated_final: true });
    expect(row.envelope.usage.input_tokens).toBeGreaterThan(0);
    const s = await state(p, executionId);
    expect(s.events).toEqual(expect.arrayContaining(['permit.allowed', 'provider.request_sent', 'usage.recorded', 'request.errored']));
    expect(s.events.filter((e) => e === 'request.errored')).toHaveLength(1);
    expect(s.inflight).toBe(0);
    // Nothing stays reserved: the estimated input is settled, the rest released.
    expect(s.permit.reservation_state).toBe('settled');
    expect(Number(s.permit.actual_cost_micros)).toBeLessThan(Number(s.permit.reserved_cost_micros));
    expect(Number(s.spend.reserved_micros)).toBe(0);
    expect(Number(s.spend.settled_micros)).toBe(Number(s.permit.actual_cost_micros));
    return row.envelope;
  }

  it('sync: closed by reconciliation; the Idempotency-Key replays the failed result; the provider saw one call', async () => {
    const p = await createTestProject(survivor.db);
    const doomed = await startDoomed();
    const before = emu.requestCount();
    const body = { operation: 'generate.text', messages: say('[[emulator:latency_ms=25000]] die mid-call') };
    const pending = http(doomed.url)('POST', '/v1/executions', { key: p.clientKey, body, headers: { 'idempotency-key': 'crash-sync-1' } }).catch((e) => e);
    // Killed while the provider holds the call.
    await waitFor(async () => emu.requestCount() - before === 1, 30_000);
    doomed.child.kill('SIGKILL');
    expect(String(await pending)).toMatch(/fetch failed|terminated|socket/i); // the connection died with the process
    // Written with the permit before the provider was called.
    const sent = await sentRequest(survivor.db, p.project.id);
    const envelope = await expectClosed(p, sent.request_id);
    const retry = await http(survivor.url!)('POST', '/v1/executions', { key: p.clientKey, body, headers: { 'idempotency-key': 'crash-sync-1' } });
    expect(retry.status).toBe(502);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.json).toEqual(envelope);
    expect(emu.requestCount() - before).toBe(1);
    const back = await http(survivor.url!)('GET', `/v1/executions/${sent.request_id}`, { key: p.clientKey });
    expect(back.json).toEqual(envelope);
  });

  it('stream: killed after the first deltas reached the caller; closed by reconciliation', async () => {
    const p = await createTestProject(survivor.db);
    const doomed = await startDoomed();
    const ac = new AbortController();
    const res = await fetch(`${doomed.url}/v1/executions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${p.clientKey}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ operation: 'generate.text', mode: 'stream', messages: say('[[emulator:chunk_delay_ms=2000]] a long story that dies') }),
      signal: ac.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('event: delta')) text += new TextDecoder().decode((await reader.read()).value);
    const id = /"id":"(exec_req_[^"]+)"/.exec(text)![1];
    doomed.child.kill('SIGKILL');
    await reader.read().catch(() => undefined);
    ac.abort();
    await expectClosed(p, id);
  });
});
