/**
 * HTTP hardening (issue 13; docs/decisions/http-hardening.md): per-route body limits, slow
 * clients disconnected by the header and request timeouts while others are answered, and failed
 * authentications limited per source address.
 */
import net from 'node:net';
import { startHarness, Harness } from '../e2e/executions/helpers';
import type { TestProject } from '../support/tollgate';

// Read by src/api/middleware/http-limits.ts when this file's Tollgate starts (one jest worker per file).
process.env.HTTP_HEADERS_TIMEOUT_MS = '1000';
process.env.HTTP_REQUEST_TIMEOUT_MS = '2000';
process.env.HTTP_TIMEOUT_CHECK_INTERVAL_MS = '250';
process.env.AUTH_FAILURE_BURST = '5';
process.env.AUTH_FAILURE_REFILL_PER_SECOND = '0.01';
// A model-input limit just above the control limit: the over-limit upload then fits well inside
// the short request timeout above, also on a loaded machine (10 MiB took most of it).
process.env.BODY_LIMIT_BYTES = String(2 * 1024 * 1024);

const CONTROL_LIMIT = 1024 * 1024;

describe('HTTP hardening', () => {
  let h: Harness;
  let p: TestProject;
  beforeAll(async () => {
    h = await startHarness();
    p = await h.project();
  });
  afterAll(async () => h?.close());

  const fromAddress = (address: string) => ({ 'x-forwarded-for': address });

  it('a control route refuses a body over 1 MiB (413) that a model-input route takes', async () => {
    const padding = 'x'.repeat(CONTROL_LIMIT + 10);
    const permit = await h.call('POST', '/v1/permits', { key: p.adminKey, body: { project_id: p.project.id, metadata: { pad: padding } }, headers: fromAddress('10.1.0.1') });
    expect(permit.status).toBe(413);
    expect(permit.json.error.code).toBe('payload_too_large');
    const exec = await h.call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: [{ role: 'user', content: `hi ${padding}` }], max_output_tokens: 8 }, headers: fromAddress('10.1.0.1') });
    expect(exec.status).not.toBe(413);
    expect(exec.status).toBeLessThan(500);
  });

  it('a body over the full limit: 413 on executions, native 413 on the proxy', async () => {
    const huge = 'x'.repeat(h.tg.config.bodyLimitBytes + 10);
    const exec = await h.call('POST', '/v1/executions', { key: p.clientKey, rawBody: `{"operation":"generate.text","messages":[{"role":"user","content":"${huge}"}]}`, headers: { 'content-type': 'application/json', ...fromAddress('10.1.0.2') } });
    expect(exec.status).toBe(413);
    expect(exec.json.error.code).toBe('payload_too_large');
    const proxy = await h.call('POST', '/v1/proxy/anthropic/v1/messages', { key: p.clientKey, rawBody: `{"model":"claude-haiku-4-5","max_tokens":5,"messages":[{"role":"user","content":"${huge}"}]}`, headers: { 'content-type': 'application/json', ...fromAddress('10.1.0.2') } });
    expect(proxy.status).toBe(413);
    expect(proxy.json).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
  });

  /**
   * Opens a raw connection, sends `head`, then `drip` every `everyMs` for as long as it is open:
   * resolves (with what the server sent) only once the server closes it.
   */
  function trickle(head: string, drip: string, everyMs: number): Promise<{ received: string }> {
    return new Promise((resolve) => {
      const url = new URL(h.tg.url!);
      let received = '';
      const socket = net.connect(Number(url.port), url.hostname, () => socket.write(head));
      const timer = setInterval(() => socket.writable && socket.write(drip), everyMs);
      socket.on('data', (d) => (received += d.toString()));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearInterval(timer);
        resolve({ received });
      });
    });
  }

  it('slowloris: a client trickling its headers is disconnected, and others are answered meanwhile', async () => {
    const slow = Array.from({ length: 5 }, () => trickle('GET /v1/permits HTTP/1.1\r\nHost: x\r\n', 'X-a: b\r\n', 200));
    // While the slow clients hold their connections, ordinary requests are answered.
    for (let i = 0; i < 3; i++) {
      const ok = await h.call('GET', '/v1/permits', { key: p.clientKey, headers: fromAddress('10.1.0.3') });
      expect(ok.status).toBe(200);
    }
    for (const { received } of await Promise.all(slow)) {
      expect(received).toMatch(/^(HTTP\/1\.1 408|$)/);
    }
  });

  it('a client trickling its body is disconnected by the request timeout', async () => {
    const head = `POST /v1/permits HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${p.clientKey}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`;
    await trickle(head, ' ', 200);
    expect((await h.call('GET', '/v1/permits', { key: p.clientKey, headers: fromAddress('10.1.0.4') })).status).toBe(200);
  });

  it('failed authentications from one address: 401 up to the burst, then 429 even with a valid key; other addresses unaffected', async () => {
    const attacker = fromAddress('10.9.9.9');
    for (let i = 0; i < 5; i++) {
      const res = await h.call('GET', '/v1/permits', { key: `tg_client_guess${i}`, headers: attacker });
      expect(res.status).toBe(401);
    }
    const blocked = await h.call('GET', '/v1/permits', { key: p.clientKey, headers: attacker });
    expect(blocked.status).toBe(429);
    expect(blocked.json.error.code).toBe('too_many_failed_authentications');
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    const proxy = await h.call('POST', '/v1/proxy/openai/v1/chat/completions', { key: p.clientKey, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, headers: attacker });
    expect(proxy.status).toBe(429);
    expect(proxy.json.error).toMatchObject({ code: 'too_many_failed_authentications', type: 'rate_limit_exceeded' });
    expect((await h.call('GET', '/v1/permits', { key: p.clientKey, headers: fromAddress('10.9.9.10') })).status).toBe(200);
  });
});
