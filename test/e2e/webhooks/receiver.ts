/**
 * A real local HTTP receiver for webhook tests: every request is recorded and verified with the
 * `standardwebhooks` package against the secret registered for its path; each path answers from
 * a programmable list of statuses (the last one repeats; default 200).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  path: string;
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  verified: boolean;
  payload: any;
  at: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  on(path: string, secret: string, statuses?: number[], extraHeaders?: Record<string, string>): void;
  at(path: string): Received[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const routes = new Map<string, { secret: string; statuses: number[]; n: number; headers: Record<string, string> }>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = (req.url ?? '/').split('?')[0];
      const route = routes.get(path);
      const headers = {
        'webhook-id': String(req.headers['webhook-id'] ?? ''),
        'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
      };
      let verified = false;
      let payload: any = null;
      if (route) {
        try {
          payload = new Webhook(route.secret).verify(body, headers);
          verified = true;
        } catch {
          verified = false;
        }
      }
      received.push({ path, id: headers['webhook-id'], timestamp: headers['webhook-timestamp'], signature: headers['webhook-signature'], body, verified, payload, at: Date.now() });
      const status = route ? route.statuses[Math.min(route.n, route.statuses.length - 1)] : 404;
      if (route) route.n += 1;
      res.writeHead(status, { 'content-type': 'text/plain', ...(status >= 300 && status < 400 ? { location: 'http://127.0.0.1:9/elsewhere' } : {}), ...(route?.headers ?? {}) });
      res.end(status >= 200 && status < 300 ? 'ok' : `status ${status}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    on(path, secret, statuses = [200], extraHeaders = {}) {
      routes.set(path, { secret, statuses, n: 0, headers: extraHeaders });
    },
    at: (path) => received.filter((r) => r.path === path),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
