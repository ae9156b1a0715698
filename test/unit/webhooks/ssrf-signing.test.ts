import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { secretBoxFromKey, keyFromMasterKey } from '../../../src/crypto/secret-box';
import { sendWebhook } from '../../../src/webhooks/send';
import { newWebhookSecret, signedHeaders } from '../../../src/webhooks/signing';
import { allowList, checkedAddresses, isInternalAddress, SsrfRefusedError, type Resolver } from '../../../src/webhooks/ssrf';
import { webhookTypesOf } from '../../../src/webhooks/events';

describe('SSRF guard', () => {
  it.each([
    ['127.0.0.1', true], ['10.1.2.3', true], ['172.31.255.255', true], ['192.168.0.1', true], ['169.254.169.254', true], ['100.64.1.1', true],
    ['0.0.0.0', true], ['224.0.0.1', true], ['::1', true], ['fe80::1', true], ['fd00:ec2::254', true], ['::ffff:127.0.0.1', true], ['::ffff:7f00:1', true],
    ['64:ff9b::10.0.0.1', true], ['8.8.8.8', false], ['172.32.0.1', false], ['2606:4700::1111', false], ['::ffff:8.8.8.8', false], ['not-an-ip', true],
  ])('%s internal: %s', (ip, internal) => {
    expect(isInternalAddress(ip)).toBe(internal);
  });

  it('allow-list: host names, addresses and CIDR ranges', async () => {
    const allow = allowList(['localhost', '10.0.0.0/8', '::1']);
    await expect(checkedAddresses('10.9.9.9', allow)).resolves.toEqual([{ address: '10.9.9.9', family: 4 }]);
    await expect(checkedAddresses('[::1]', allow)).resolves.toEqual([{ address: '::1', family: 6 }]);
    await expect(checkedAddresses('192.168.1.1', allow)).rejects.toBeInstanceOf(SsrfRefusedError);
    const resolve: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
    await expect(checkedAddresses('localhost', allow, resolve)).resolves.toHaveLength(1);
    await expect(checkedAddresses('other.test', allow, resolve)).rejects.toThrow(/127\.0\.0\.1/);
  });

  it('refuses a host when any of its addresses is internal', async () => {
    const resolve: Resolver = async () => [{ address: '93.184.216.34', family: 4 }, { address: '10.0.0.7', family: 4 }];
    await expect(checkedAddresses('mixed.test', allowList([]), resolve)).rejects.toThrow(/10\.0\.0\.7/);
  });

  it('at delivery, connects only to the address it checked: a DNS rebinding to an internal address is refused', async () => {
    let hits = 0;
    const server = http.createServer((_req, res) => {
      hits++;
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    try {
      // The first answer (the subscription check) was public; at delivery the name resolves to loopback.
      let calls = 0;
      const rebinding: Resolver = async () => (++calls === 1 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
      await expect(checkedAddresses('rebind.test', allowList([]), rebinding)).resolves.toHaveLength(1);
      const r = await sendWebhook(`http://rebind.test:${port}/hook`, {}, '{}', { timeoutMs: 2000, allow: allowList([]), resolve: rebinding });
      expect(r).toMatchObject({ ok: false, refused: true, statusCode: null });
      expect(r.error).toMatch(/refused: .*127\.0\.0\.1/);
      expect(hits).toBe(0);
      // Allow-listed, the same target is reached.
      const allowed = await sendWebhook(`http://rebind.test:${port}/hook`, {}, '{}', { timeoutMs: 15_000, allow: allowList(['127.0.0.1']), resolve: rebinding });
      expect(allowed).toMatchObject({ ok: true, statusCode: 200, responseBody: 'ok' });
      expect(hits).toBe(1);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('times out a receiver that does not answer', async () => {
    const server = http.createServer(() => undefined);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    try {
      const r = await sendWebhook(`http://127.0.0.1:${port}/slow`, {}, '{}', { timeoutMs: 300, allow: allowList(['127.0.0.1']) });
      expect(r).toMatchObject({ ok: false, statusCode: null, refused: false });
      expect(r.error).toMatch(/timed out after 300 ms/);
      expect(r.latencyMs).toBeGreaterThanOrEqual(290);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe('Standard Webhooks signing', () => {
  it('produces signatures the standardwebhooks package verifies', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_/);
    const body = JSON.stringify({ type: 'job.completed', data: { id: 'job_1' } });
    const ts = Math.floor(Date.now() / 1000);
    const headers = signedHeaders(secret, 'msg_1', ts, body);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(secret).sign('msg_1', new Date(ts * 1000), body)).toBe(headers['webhook-signature']);
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
  });
});

describe('secret box (AES-256-GCM)', () => {
  const box = secretBoxFromKey(keyFromMasterKey(Buffer.alloc(32, 7).toString('base64')));
  it('round-trips, uses a fresh nonce, and binds the purpose', () => {
    const a = box.seal('whsec_abc', 'webhook_secret:whsub_1');
    const b = box.seal('whsec_abc', 'webhook_secret:whsub_1');
    expect(a).not.toBe(b);
    expect(a).not.toContain('abc');
    expect(box.open(a, 'webhook_secret:whsub_1')).toBe('whsec_abc');
    expect(() => box.open(a, 'webhook_secret:whsub_2')).toThrow();
    const other = secretBoxFromKey(keyFromMasterKey(Buffer.alloc(32, 8).toString('base64')));
    expect(() => other.open(a, 'webhook_secret:whsub_1')).toThrow();
    const parts = a.split('.');
    parts[2] = Buffer.from('tampered').toString('base64url');
    expect(() => box.open(parts.join('.'), 'webhook_secret:whsub_1')).toThrow();
  });
});

describe('webhook event types of timeline events', () => {
  it('maps job, permit and budget events', () => {
    expect(webhookTypesOf({ event_type: 'job.completed', metadata: {} })).toEqual(['job.completed']);
    expect(webhookTypesOf({ event_type: 'permit.challenged', metadata: { reason_code: 'policy.review_required' } })).toEqual(['permit.challenged']);
    expect(webhookTypesOf({ event_type: 'permit.challenged', metadata: { reason_code: 'budget.monthly_threshold_exceeded' } })).toEqual(['permit.challenged', 'budget.threshold_exceeded']);
    expect(webhookTypesOf({ event_type: 'permit.denied', metadata: { reason_code: 'budget.daily_cap_exceeded' } })).toEqual(['budget.cap_exceeded']);
    expect(webhookTypesOf({ event_type: 'permit.denied', metadata: { reason_code: 'policy.model_not_allowed' } })).toEqual([]);
    expect(webhookTypesOf({ event_type: 'permit.allowed', metadata: {} })).toEqual([]);
  });
});
