/**
 * Secret scan (issue 13): traffic that carries keys and a canary prompt through every logging path
 * (sync, stream, proxies, jobs, failed authentication, provider failures, a NUL that once made
 * PostgreSQL log prompt fragments) at debug level into a log file, then the file is scanned for
 * API keys, provider keys, Authorization values and the prompt. The jest global teardown runs the
 * same scan over the logs of the whole run (test/support/test-logs.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startHarness, Harness } from '../e2e/executions/helpers';
import type { TestProject } from '../support/tollgate';
import { CANARY_PROMPT, scanLogs } from '../support/test-logs';

const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-secret-scan-'));
process.env.TEST_LOG_DIR = logDir;
process.env.TEST_LOG_LEVEL = 'debug';

describe('secret scan of the logs', () => {
  let h: Harness;
  let p: TestProject;
  beforeAll(async () => {
    h = await startHarness();
    p = await h.project();
  });
  afterAll(async () => {
    await h?.close();
    fs.rmSync(logDir, { recursive: true, force: true });
  });

  it('keys, provider keys, Authorization values and prompt text never reach the log', async () => {
    const say = (extra = '') => [{ role: 'user', content: `${extra} ${CANARY_PROMPT}` }];
    const answers: number[] = [];
    const call = async (method: string, route: string, opts: Parameters<Harness['call']>[2]) => answers.push((await h.call(method, route, opts)).status);
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
    await new Promise((r) => setTimeout(r, 3000)); // jobs and asynchronous records finish logging

    const scan = scanLogs(logDir, ['test-openai', 'test-anthropic', 'test-gemini'].map((k) => ['provider key', k] as [string, string]));
    // The scan is meaningful only over a log that recorded this traffic.
    expect(scan.lines).toBeGreaterThan(answers.length);
    expect(scan.findings).toEqual([]);
  }, 120_000);
});
