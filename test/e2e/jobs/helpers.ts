/**
 * What the async jobs' tests share: an OpenAI stand-in that fails on demand, and a Tollgate whose
 * jobs retry fast and run at most two at a time per project.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startEmulator, type EmulatorHandle } from '../../../emulator/server';
import { http as httpClient, startTestTollgate, type TestProject } from '../../support/tollgate';
import { waitUntil } from '../../support/wait';
import { emulatorEnv } from '../executions/helpers';

type TestTollgate = Awaited<ReturnType<typeof startTestTollgate>>;
type Call = ReturnType<typeof httpClient>;
type FlakyOpenai = Awaited<ReturnType<typeof flakyOpenai>>;

/**
 * An OpenAI stand-in in front of the emulator: answers `plan(n)` for the n-th call of a prompt
 * containing a `[[flaky:<tag>]]` marker (a status and Retry-After), else forwards to the emulator.
 */
export async function flakyOpenai(emulatorUrl: string) {
  const calls = new Map<string, number>();
  const plans = new Map<string, (n: number) => { status: number; retryAfter?: number } | null>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const tag = /\[\[flaky:([a-z0-9-]+)\]\]/.exec(body.toString())?.[1];
      if (tag) {
        const n = (calls.get(tag) ?? 0) + 1;
        calls.set(tag, n);
        const plan = plans.get(tag)?.(n);
        if (plan) {
          res.writeHead(plan.status, { 'content-type': 'application/json', ...(plan.retryAfter !== undefined ? { 'retry-after': String(plan.retryAfter) } : {}) });
          res.end(JSON.stringify({ error: { message: `flaky ${plan.status}`, type: 'server_error', code: null } }));
          return;
        }
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
    calls,
    plan: (tag: string, fn: (n: number) => { status: number; retryAfter?: number } | null) => plans.set(tag, fn),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/**
 * Starts the emulator, the flaky OpenAI in front of it and a Tollgate for the describe block it is
 * called in (closed after it): at most 2 jobs processing per project, 3 attempts, short backoffs.
 */
export function jobsSuite() {
  let emu: EmulatorHandle;
  let flaky: FlakyOpenai;
  let tg: TestTollgate;
  let client: Call;

  beforeAll(async () => {
    emu = await startEmulator({ port: 0 });
    flaky = await flakyOpenai(emu.url);
    tg = await startTestTollgate({
      env: {
        ...emulatorEnv(emu.url),
        OPENAI_BASE_URL: flaky.url,
        JOBS_MAX_PROCESSING_PER_PROJECT: '2',
        JOBS_MAX_ATTEMPTS: '3',
        JOBS_RETRY_BASE_MS: '100',
        JOBS_RETRY_MAX_MS: '400',
        JOBS_RETRY_AFTER_MAX_MS: '5000',
        JOBS_HEARTBEAT_TIMEOUT_MS: '5000',
      },
    });
    client = httpClient(tg.url!);
  });
  afterAll(async () => {
    await tg?.close();
    await flaky?.close();
    await emu?.close();
  });

  const call: Call = (...args) => client(...args);
  const submit = (p: TestProject, body: unknown, headers: Record<string, string> = {}) => call('POST', '/v1/jobs', { key: p.clientKey, body, headers });
  const finished = (p: TestProject, id: string, ms = 30_000) =>
    waitUntil(async () => {
      const r = await call('GET', `/v1/jobs/${id}`, { key: p.clientKey });
      return ['completed', 'failed', 'cancelled'].includes(r.json?.status) ? r.json : null;
    }, ms);

  return {
    get tg() {
      return tg;
    },
    get flaky() {
      return flaky;
    },
    call,
    submit,
    finished,
  };
}
