/**
 * Secret scan (issue 13): traffic that carries keys and a canary prompt through every logging path
 * (sync, stream, proxies, jobs, failed authentication, provider failures, a NUL that once made
 * PostgreSQL log prompt fragments) at debug level into a log file, then the file is scanned for
 * API keys, provider keys (a project's own, set through the management API), webhook signing
 * secrets (a subscription whose deliveries are signed with it), Authorization values and the
 * prompt. The jest global teardown runs the
 * same scan over the logs of the whole run (test/support/test-logs.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startHarness, Harness } from '../e2e/executions/helpers';
import type { TestProject } from '../support/tollgate';
import { CANARY_PROMPT, CANARY_PROVIDER_KEY, scanLogs } from '../support/test-logs';
import { startReceiver, type Receiver } from '../e2e/webhooks/receiver';

const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-secret-scan-'));
process.env.TEST_LOG_DIR = logDir;
process.env.TEST_LOG_LEVEL = 'debug';

describe('secret scan of the logs', () => {
  let h: Harness;
  let p: TestProject;
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver();
    h = await startHarness({ WEBHOOK_FANOUT: 'on', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1/32' });
    p = await h.project();
  });
  afterAll(async () => {
    await h?.close();
    await rx?.close();
    fs.rmSync(logDir, { recursive: true, force: true });
  });

  it('keys, provider keys, webhook secrets, Authorization values and prompt text never reach the log', async () => {
    const say = (extra = '') => [{ role: 'user', content: `${extra} ${CANARY_PROMPT}` }];
    const answers: number[] = [];
    const call = async (method: string, route: string, opts: Parameters<Harness['call']>[2]) => answers.push((await h.call(method, route, opts)).status);
    // A webhook subscription: its secret is answered once, then signs every delivery (job.completed below).
    const hook = await h.call('POST', '/v1/webhooks', { key: p.adminKey, body: { url: `${rx.url}/scan`, event_types: ['job.completed', 'job.failed'] } });
    expect(hook.status).toBe(201);
    const webhookSecret: string = hook.json.secret;
    rx.on('/scan', webhookSecret);
    // A project provider key (used for dispatch, tested, failing upstream) in place of the deployment's.
    const providerKey = `${CANARY_PROVIDER_KEY}-${p.project.id}`;
    expect((await h.call('PUT', `/v1/projects/${p.project.id}/providers/openai/key`, { key: p.adminKey, body: { api_key: providerKey } })).status).toBe(200);
    await call('POST', `/v1/projects/${p.project.id}/providers/openai/test`, { key: p.adminKey });
    await call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say() } });
    await call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', mode: 'stream', messages: say() }, headers: { accept: 'text/event-stream' } });
    await call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('[[emulator:status=500]]') } });
    await call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('nul \u0000 here') } });
    await call('POST', '/v1/execute', { key: p.clientKey, body: { model: 'gpt-4o-mini', input: { messages: say(), max_tokens: 1e21 } } });
    await call('POST', '/v1/proxy/openai/v1/chat/completions', { key: p.clientKey, body: { model: 'gpt-4o-mini', messages: say() } });
    await call('POST', '/v1/proxy/openai/v1/chat/completions', { key: p.clientKey, body: { model: 'gpt-4o-mini', messages: say('[[emulator:status=503]]') } });
    await call('POST', '/v1/proxy/anthropic/v1/messages', { headers: { 'x-api-key': p.clientKey }, body: { model: 'claude-haiku-4-5', max_tokens: 20, messages: say() } });
    await call('POST', '/v1/jobs', { key: p.clientKey, body: { operation: 'generate.text', messages: say() } });
    await call('GET', '/v1/permits', { key: `tg_client_${'A'.repeat(40)}` });
    await call('GET', '/v1/permits', { headers: { authorization: `Bearer ${p.adminKey}x` } });
    await call('POST', '/v1/permits', { key: p.clientKey, body: { project_id: p.project.id, metadata: { note: `meta \u0000 ${CANARY_PROMPT}` } } });
    expect(answers.every((s) => s < 500 || s === 502 || s === 503)).toBe(true);
    // The job's completion is delivered (signed with the subscription's secret).
    const deadline = Date.now() + 30_000;
    while (!rx.at('/scan').length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    expect(rx.at('/scan')[0]).toMatchObject({ verified: true });
    await new Promise((r) => setTimeout(r, 3000)); // jobs and asynchronous records finish logging

    const scan = scanLogs(logDir, [
      ...['test-openai', 'test-anthropic', 'test-gemini', providerKey].map((k) => ['provider key', k] as [string, string]),
      ['webhook signing secret', webhookSecret],
    ]);
    // The scan is meaningful only over a log that recorded this traffic.
    expect(scan.lines).toBeGreaterThan(answers.length);
    expect(scan.findings).toEqual([]);
  }, 120_000);

  it('the scan finds a planted provider key and webhook secret (by canary, by shape and by value)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-secret-scan-self-'));
    try {
      const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
      fs.writeFileSync(path.join(dir, 'x.log'), [`{"msg":"key ${CANARY_PROVIDER_KEY}-abc"}`, `{"msg":"signed with ${secret}"}`, '{"msg":"clean"}'].join('\n'));
      const kinds = scanLogs(dir, [['webhook signing secret', secret]]).findings.map((f) => `${f.line} ${f.kind}`);
      expect(kinds.sort()).toEqual(['1 provider key', '2 webhook signing secret', '2 webhook signing secret']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
