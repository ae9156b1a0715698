import Koa from 'koa';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorHandler } from '../../../src/api/middleware/error-handler';
import { createLogger } from '../../../src/logger';

/** Serves one request whose handler throws `err`; returns status, retry-after and body. */
async function answerTo(err: unknown): Promise<{ status: number; retryAfter: string | null; body: { error: { code: string } } }> {
  const app = new Koa();
  app.silent = true;
  app.use(errorHandler(createLogger('silent')));
  app.use(() => {
    throw err;
  });
  const server = http.createServer(app.callback()).listen(0);
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as { error: { code: string } } };
  } finally {
    server.close();
  }
}

describe('error handler', () => {
  it('answers a PostgreSQL outage 503 database_unavailable with Retry-After', async () => {
    const outages = [
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      new Error('Connection terminated unexpectedly'),
    ];
    for (const err of outages) {
      const a = await answerTo(err);
      expect([a.status, a.retryAfter, a.body.error.code]).toEqual([503, '1', 'database_unavailable']);
    }
  });

  it('keeps other failures 500 internal_error', async () => {
    for (const err of [new Error('boom'), Object.assign(new Error('duplicate key'), { code: '23505' })]) {
      const a = await answerTo(err);
      expect([a.status, a.retryAfter, a.body.error.code]).toEqual([500, null, 'internal_error']);
    }
  });
});
