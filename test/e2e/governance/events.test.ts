import { request } from 'node:http';
import { appendEvents } from '../../../src/db/repositories/events';
import { chainAllProjectEvents } from '../../../src/db/repositories/event-chain';
import { createTestProject, http as httpClient, startTestTollgate } from '../../support/tollgate';
import { waitUntil } from '../../support/wait';
import { openSse, writeEvents } from './helpers';

describe('governance events: list, get, SSE stream across two API processes', () => {
  let a: Awaited<ReturnType<typeof startTestTollgate>>;
  let b: Awaited<ReturnType<typeof startTestTollgate>>;

  beforeAll(async () => {
    // Short heartbeat and drain timeout so the tests can watch both.
    const env = { EVENT_STREAM_HEARTBEAT_MS: '300', EVENT_STREAM_DRAIN_TIMEOUT_MS: '500' };
    a = await startTestTollgate({ role: 'api', env });
    b = await startTestTollgate({ role: 'api', env });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it('lists with filters, both orders and cursor pagination; gets one event; another project sees nothing', async () => {
    const call = httpClient(a.url!);
    const p = await createTestProject(a.db);
    const other = await createTestProject(a.db);
    await writeEvents(a.db, p.project.id, 7, { timestamp: new Date('2026-01-01T00:00:00Z') });
    await writeEvents(a.db, p.project.id, 3, { timestamp: new Date('2026-02-01T00:00:00Z'), eventType: 'budget.cap_exceeded', requestId: 'exec_req_special', permitId: 'pmt_special' });

    const all = await call('GET', '/v1/governance/events?order=asc&limit=200', { key: p.clientKey });
    expect(all.status).toBe(200);
    expect(all.json.data).toHaveLength(10);
    expect(all.json.data.map((e: any) => e.position)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(all.json.data[0]).toMatchObject({ object: 'governance_event', event_type: 'permit.allowed', metadata: { i: 0 }, chain: { prev_hash: '0'.repeat(64) } });
    expect(all.json.data[1].chain.prev_hash).toBe(all.json.data[0].chain.hash);
    expect(all.json.next_cursor).toBeNull();

    // Newest first by default; pages of 3 walk every event once.
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: any = await call('GET', `/v1/governance/events?limit=3${cursor ? `&cursor=${cursor}` : ''}`, { key: p.clientKey });
      expect(page.status).toBe(200);
      seen.push(...page.json.data.map((e: any) => e.id));
      cursor = page.json.next_cursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(4);
    expect(seen).toEqual(all.json.data.map((e: any) => e.id).reverse());

    const byType = await call('GET', '/v1/governance/events?event_type=budget.cap_exceeded', { key: p.clientKey });
    expect(byType.json.data.map((e: any) => e.event_type)).toEqual(Array(3).fill('budget.cap_exceeded'));
    const twoTypes = await call('GET', '/v1/governance/events?event_type=budget.cap_exceeded,execution.completed', { key: p.clientKey });
    expect(twoTypes.json.data).toHaveLength(6);
    expect((await call('GET', '/v1/governance/events?request_id=exec_req_special', { key: p.clientKey })).json.data).toHaveLength(3);
    expect((await call('GET', '/v1/governance/events?permit_id=pmt_special', { key: p.clientKey })).json.data).toHaveLength(3);
    const since = await call('GET', '/v1/governance/events?since=2026-01-15T00:00:00Z', { key: p.clientKey });
    expect(since.json.data).toHaveLength(3);
    const until = await call('GET', '/v1/governance/events?until=2026-01-15T00:00:00Z', { key: p.clientKey });
    expect(until.json.data).toHaveLength(7);
    expect((await call('GET', '/v1/governance/events?since=nope', { key: p.clientKey })).status).toBe(400);
    expect((await call('GET', '/v1/governance/events?cursor=bogus', { key: p.clientKey })).json.error.code).toBe('validation_error');
    // A cursor of one order is refused by the other.
    const firstPage = await call('GET', '/v1/governance/events?limit=2', { key: p.clientKey });
    expect((await call('GET', `/v1/governance/events?order=asc&cursor=${firstPage.json.next_cursor}`, { key: p.clientKey })).status).toBe(400);

    const one = await call('GET', `/v1/governance/events/${all.json.data[4].id}`, { key: p.clientKey });
    expect(one.status).toBe(200);
    expect(one.json).toEqual(all.json.data[4]);
    expect((await call('GET', `/v1/governance/events/${all.json.data[4].id}`, { key: other.clientKey })).status).toBe(404);
    expect((await call('GET', '/v1/governance/events', { key: other.clientKey })).json.data).toEqual([]);
    expect((await call('GET', '/v1/governance/events')).status).toBe(401);
  });

  it('streams with id = position; resumes on another API process with Last-Event-ID, no gap and no duplicate', async () => {
    const p = await createTestProject(a.db);
    await writeEvents(a.db, p.project.id, 3);
    const auth = { authorization: `Bearer ${p.clientKey}` };

    const first = openSse(`${a.url}/v1/governance/events/stream?after=0`, auth);
    await waitUntil(async () => first.messages.length >= 3, 10_000, 50);
    // Written while the client is connected, by a writer that is neither API process.
    await writeEvents(a.db, p.project.id, 2);
    await waitUntil(async () => first.messages.length >= 5, 10_000, 50);
    first.close();
    await first.done;
    expect(first.status()).toBe(200);
    expect(first.messages.map((m) => m.id)).toEqual(['1', '2', '3', '4', '5']);
    const lastId = first.messages[first.messages.length - 1].id!;

    // Disconnected: more events arrive.
    await writeEvents(a.db, p.project.id, 4);
    const second = openSse(`${b.url}/v1/governance/events/stream`, { ...auth, 'last-event-id': lastId });
    await waitUntil(async () => second.messages.length >= 4, 10_000, 50);
    await writeEvents(a.db, p.project.id, 1);
    await waitUntil(async () => second.messages.length >= 5, 10_000, 50);
    await new Promise((r) => setTimeout(r, 600)); // nothing more may come
    second.close();
    await second.done;
    expect(second.messages.map((m) => m.id)).toEqual(['6', '7', '8', '9', '10']);

    const listed = await httpClient(b.url!)('GET', '/v1/governance/events?order=asc&limit=200', { key: p.clientKey });
    const streamed = [...first.messages, ...second.messages].map((m) => JSON.parse(m.data));
    expect(streamed.map((e) => e.id)).toEqual(listed.json.data.map((e: any) => e.id));
    expect(streamed).toEqual(listed.json.data);
  });

  it('starts at the head without a position, filters by type, refuses a malformed Last-Event-ID', async () => {
    const p = await createTestProject(a.db);
    await writeEvents(a.db, p.project.id, 2);
    const auth = { authorization: `Bearer ${p.clientKey}` };
    const s = openSse(`${b.url}/v1/governance/events/stream?event_type=budget.cap_exceeded`, auth);
    await waitUntil(async () => s.comments.some((c) => c.includes('after position 2')), 10_000, 50);
    await writeEvents(a.db, p.project.id, 2, { eventType: 'permit.allowed' });
    await writeEvents(a.db, p.project.id, 1, { eventType: 'budget.cap_exceeded' });
    await waitUntil(async () => s.messages.length >= 1, 10_000, 50);
    s.close();
    await s.done;
    expect(s.messages.map((m) => [m.id, JSON.parse(m.data).event_type])).toEqual([['5', 'budget.cap_exceeded']]);
    const bad = await httpClient(a.url!)('GET', '/v1/governance/events/stream', { key: p.clientKey, headers: { 'last-event-id': 'abc' } });
    expect(bad.status).toBe(400);
  });

  it('sends heartbeats on an idle stream', async () => {
    const p = await createTestProject(a.db);
    const s = openSse(`${a.url}/v1/governance/events/stream`, { authorization: `Bearer ${p.clientKey}` });
    await waitUntil(async () => s.comments.filter((c) => c === 'heartbeat').length >= 3, 10_000, 50);
    s.close();
    await s.done;
    expect(s.messages).toEqual([]);
  });

  it('disconnects a consumer that stops reading; it resumes with Last-Event-ID and misses nothing', async () => {
    const p = await createTestProject(a.db);
    const total = 3000;
    const pad = 'x'.repeat(4000);
    await appendEvents(
      a.db,
      Array.from({ length: total }, (_, i) => ({ projectId: p.project.id, eventType: 'permit.allowed', source: 'test', phase: 'permit', metadata: { i, pad } })),
    );
    await chainAllProjectEvents(a.db, p.project.id);

    // Streams of `a` that are over: its http metrics count a request once the response closed.
    const streamsClosed = async () => {
      const text = await (await fetch(`${a.url}/metrics`)).text();
      return [...text.matchAll(/^tollgate_http_request_duration_seconds_count\{[^}]*route="\/v1\/governance\/events\/stream"[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    };
    const closedBefore = await streamsClosed();

    // A consumer that reads nothing until the server closed the stream: the server's socket buffer
    // fills, the drain timeout (500 ms) passes. Capped: a server that never disconnects it fails below.
    const url = new URL(`${a.url}/v1/governance/events/stream?after=0`);
    const received = await new Promise<{ text: string; endedBySelf: boolean }>((resolve, reject) => {
      const req = request(url, { headers: { authorization: `Bearer ${p.clientKey}`, accept: 'text/event-stream' } }, (res) => {
        res.pause();
        let text = '';
        let settled = false;
        const finish = (endedBySelf: boolean) => {
          if (settled) return;
          settled = true;
          clearTimeout(guard);
          req.destroy();
          resolve({ text, endedBySelf });
        };
        const guard = setTimeout(() => finish(false), 40_000);
        void waitUntil(async () => (await streamsClosed()) > closedBefore, 20_000)
          .catch(() => undefined)
          .then(() => {
            res.on('data', (c: Buffer) => (text += c.toString('utf8')));
            res.on('end', () => finish(true));
            res.on('aborted', () => finish(true));
            res.on('error', () => finish(true));
            res.on('close', () => finish(true));
            res.resume();
          });
      });
      req.on('error', reject);
      req.end();
    });
    expect(received.endedBySelf).toBe(true);
    const complete = received.text.slice(0, received.text.lastIndexOf('\n\n') + 2);
    const firstIds = [...complete.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(firstIds.length).toBeGreaterThan(0);
    expect(firstIds.length).toBeLessThan(total);
    expect(firstIds).toEqual(Array.from({ length: firstIds.length }, (_, i) => i + 1));

    const resumed = openSse(`${b.url}/v1/governance/events/stream`, { authorization: `Bearer ${p.clientKey}`, 'last-event-id': String(firstIds[firstIds.length - 1]) });
    await waitUntil(async () => resumed.messages.length >= total - firstIds.length, 30_000, 100);
    resumed.close();
    await resumed.done;
    const ids = [...firstIds, ...resumed.messages.map((m) => Number(m.id))];
    expect(ids).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  }, 90_000);
});
