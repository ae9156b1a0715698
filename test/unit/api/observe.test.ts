/**
 * The access log line and the latency histogram (src/api/middleware/observe.ts) are recorded once
 * the response is over: a streamed body's whole time counts, and a client that leaves early is
 * still logged, as aborted.
 */
import http from 'node:http';
import { Readable, Writable } from 'node:stream';
import Koa from 'koa';
import pino from 'pino';
import { Registry } from 'prom-client';
import { createHttpMetrics, observe } from '../../../src/api/middleware/observe';

function appWithLog() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const registry = new Registry();
  let releaseLastChunk!: () => void;
  const lastChunk = new Promise<void>((r) => (releaseLastChunk = r));
  let slowReceived = false;
  const app = new Koa();
  app.use(observe(pino({ level: 'info' }, sink), createHttpMetrics(registry)));
  app.use(async (ctx) => {
    if (ctx.path === '/stream') {
      // Three chunks 60 ms apart, the last once the test releases it: the chain returns at once,
      // the body takes at least 120 ms.
      ctx.body = Readable.from(
        (async function* () {
          for (let i = 0; i < 3; i++) {
            if (i > 0) await new Promise((r) => setTimeout(r, 60));
            if (i === 2) await lastChunk;
            yield `chunk ${i}\n`;
          }
        })(),
      );
    } else if (ctx.path === '/slow') {
      slowReceived = true;
      await new Promise((r) => setTimeout(r, 5_000).unref());
      ctx.body = 'late';
    } else {
      ctx.body = { ok: true };
    }
  });
  const server = http.createServer(app.callback());
  return { server, lines, registry, releaseLastChunk, slowReceived: () => slowReceived };
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address() as { port: number };
  return `http://127.0.0.1:${addr.port}`;
}

const waitFor = async (check: () => boolean) => {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
};

describe('access log and latency histogram', () => {
  it('counts a streamed body to its end, and writes the line after the response', async () => {
    const { server, lines, registry, releaseLastChunk } = appWithLog();
    const url = await listen(server);
    try {
      const res = await fetch(`${url}/stream`);
      const reader = res.body!.getReader();
      await reader.read(); // the first chunk is out; the line is not written yet
      expect(lines).toHaveLength(0);
      releaseLastChunk();
      while (!(await reader.read()).done);
      await waitFor(() => lines.length === 1);
      expect(lines).toEqual([expect.objectContaining({ msg: 'request', method: 'GET', status: 200 })]);
      expect(lines[0].duration_ms).toBeGreaterThanOrEqual(100);
      expect(lines[0].aborted).toBeUndefined();
      expect(await registry.metrics()).toMatch(/tollgate_http_request_duration_seconds_count\{method="GET",route="unmatched",status="200"\} 1/);
    } finally {
      server.close();
    }
  });

  it('logs a request whose client went away before the response, as aborted', async () => {
    const { server, lines, slowReceived } = appWithLog();
    const url = await listen(server);
    try {
      const controller = new AbortController();
      const pending = fetch(`${url}/slow`, { signal: controller.signal }).then(
        () => 'answered',
        (e: { name: string }) => e.name,
      );
      await waitFor(slowReceived); // aborted before the server has it, there is no request to log
      controller.abort();
      expect(await pending).toBe('AbortError');
      await waitFor(() => lines.length === 1);
      expect(lines).toEqual([expect.objectContaining({ msg: 'request', aborted: true })]);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('logs an ordinary response once', async () => {
    const { server, lines } = appWithLog();
    const url = await listen(server);
    try {
      expect((await fetch(`${url}/plain`)).status).toBe(200);
      await waitFor(() => lines.length === 1);
      await new Promise((r) => setTimeout(r, 50));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ status: 200, method: 'GET' });
      expect(lines[0].aborted).toBeUndefined();
    } finally {
      server.close();
    }
  });
});
