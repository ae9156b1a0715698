/**
 * One request carrying the largest prompt the API accepts (a body just under BODY_LIMIT_BYTES) must
 * not stall the process for the others. Order by signals: a gate in front of the provider holds
 * the large call once it was governed and dispatched; a small call made then must answer while the
 * large one is still held, and the large one answers once released.
 *
 * The event loop's longest stall over the large call's whole life (parse, firewall, estimate,
 * dispatch, record) is measured and printed, not asserted: tests share two CPUs with other test
 * files, and a stalled machine stalls every process on it. A non-linear scan of the prompt (minutes
 * at this size) fails the test by its timeout. The delay of other requests, against its bound, is
 * measured by `npm run bench:gateway -- --stall` (docs/performance.md).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startEmulator, type EmulatorHandle } from '../../../emulator/server';
import { createTestProject, http as httpClient, startTestTollgate, type TestProject } from '../../support/tollgate';
import { emulatorEnv, say } from './helpers';

const BODY_LIMIT_BYTES = 10 * 1024 * 1024;

/** An OpenAI upstream: requests over 1 MB are held until released, then answered; the rest go to the emulator. */
async function gate(emulatorUrl: string) {
  let releaseHeld!: () => void;
  const released = new Promise<void>((r) => (releaseHeld = r));
  let signalHeld!: () => void;
  const held = new Promise<void>((r) => (signalHeld = r));
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      if (body.length > 1024 * 1024) {
        signalHeld();
        await released;
        // Answered here, not by the in-process emulator: the stall measured is Tollgate's alone.
        const reply = JSON.stringify({
          id: 'chatcmpl-large', object: 'chat.completion', created: 0, model: 'gpt-4o-mini',
          choices: [{ index: 0, message: { role: 'assistant', content: 'Read it all.' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 2_000_000, completion_tokens: 4, total_tokens: 2_000_004 },
        });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply) });
        res.end(reply);
        return;
      }
      const up = http.request(`${emulatorUrl}/openai${req.url}`, { method: req.method, headers: { ...req.headers, host: new URL(emulatorUrl).host } }, (u) => {
        res.writeHead(u.statusCode ?? 502, u.headers);
        u.pipe(res);
      });
      up.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held,
    release: () => releaseHeld(),
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

describe('the largest accepted prompt beside other requests', () => {
  let emu: EmulatorHandle;
  let upstream: Awaited<ReturnType<typeof gate>>;
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof httpClient>;
  let p: TestProject;

  beforeAll(async () => {
    emu = await startEmulator({ port: 0 });
    upstream = await gate(emu.url);
    tg = await startTestTollgate({ env: { ...emulatorEnv(emu.url), OPENAI_BASE_URL: upstream.url, BODY_LIMIT_BYTES: String(BODY_LIMIT_BYTES) } });
    call = httpClient(tg.url!);
    p = await createTestProject(tg.db);
  });
  afterAll(async () => {
    upstream?.release();
    await tg?.close();
    await upstream?.close();
    await emu?.close();
  });

  it('a small call answers while a prompt of the body limit is in flight; the large one answers after', async () => {
    // Ordinary words (the firewall and the estimate read all of it), filling the body to within 1 KB of the limit.
    const words = 'the quarterly report shows steady growth across every region and product line ';
    const prompt = words.repeat(Math.floor((BODY_LIMIT_BYTES - 1024) / words.length));
    const body = { operation: 'generate.text', messages: say(prompt), routing: { provider: 'openai' }, parameters: { max_output_tokens: 16 } };
    // Serialized before the measurement starts: the test's own work on the body is not Tollgate's.
    const raw = JSON.stringify(body);
    expect(Buffer.byteLength(raw)).toBeLessThanOrEqual(BODY_LIMIT_BYTES);

    // One small call first: the first response builds the test harness's OpenAPI document (it checks
    // every answer against it) in this process, a stall of its own that is not Tollgate's.
    expect((await call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('warm up'), routing: { provider: 'openai' } } })).status).toBe(200);

    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    let largeDone = false;
    const large = call('POST', '/v1/executions', { key: p.clientKey, rawBody: raw, headers: { 'content-type': 'application/json' } }).finally(() => (largeDone = true));
    // The large call reaches the provider (or answers early, which fails here with its answer).
    const early = await Promise.race([upstream.held.then(() => null), large]);
    if (early) throw new Error(`the large call answered before it reached the provider: ${early.status} ${early.text.slice(0, 500)}`);

    const small = await call('POST', '/v1/executions', { key: p.clientKey, body: { operation: 'generate.text', messages: say('a small one'), routing: { provider: 'openai' } } });
    expect(small.status).toBe(200);
    expect(small.json.status).toBe('completed');
    expect(largeDone).toBe(false);

    upstream.release();
    const done = await large;
    loop.disable();
    expect(done.status).toBe(200);
    expect(done.json.status).toBe('completed');
    expect(done.json.usage.input_tokens).toBeGreaterThan(100_000);
    const stallMs = loop.max / 1e6;
    process.stdout.write(`largest event-loop stall over the large call: ${stallMs.toFixed(0)} ms\n`);
  });
});
