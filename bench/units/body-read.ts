/**
 * `npm run bench:units -- --body-read`: how long reading one body of the limit's size (10 MiB of
 * JSON, a prompt of ordinary words) holds the event loop, per reader, rounds interleaved in one
 * process: koa-body's JSON parser (what model-input routes used, control routes still use), the
 * model-input reader (src/api/middleware/model-json.ts), and the proxy's read and parse
 * (src/proxy/request.ts) against its one-step form. Each read goes over a local HTTP connection;
 * the figure is the longest event-loop delay while it runs and BENCH_TAIL_MS (300) after it answered
 * (the collections it brings on may run then; monitorEventLoopDelay, 1 ms resolution): what another
 * request on the process waits at most. A retained heap of
 * BENCH_HEAP_MB (80) stands for the gateway's, so collections cost what they cost there.
 * Knobs: BENCH_ROUNDS (15), BENCH_HEAP_MB.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { koaBody } from 'koa-body';
import { readModelJson } from '../../src/api/middleware/model-json';
import { parseBody } from '../../src/proxy/request';
import { pct } from '../lib/load';

const LIMIT = 10 * 1024 * 1024;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const HEAP_MB = Number(process.env.BENCH_HEAP_MB ?? 80);
const TAIL_MS = Number(process.env.BENCH_TAIL_MS ?? 300);

type Reader = (req: http.IncomingMessage) => Promise<unknown>;

const koaParse = koaBody({ json: true, jsonStrict: true, jsonLimit: LIMIT, urlencoded: false, text: false, multipart: false, patchKoa: true, patchNode: false });

async function rawBytes(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const readers: Record<string, Reader> = {
  'koa-body (before)': async (req) => {
    const ctx = { req, request: {} as { body?: unknown }, is: () => 'json', method: 'POST' } as never as Parameters<typeof koaParse>[0];
    await koaParse(ctx, async () => undefined);
    return (ctx as never as { request: { body: unknown } }).request.body;
  },
  'model-json (now)': (req) => readModelJson(req, LIMIT),
  'proxy one step (before)': async (req) => JSON.parse((await rawBytes(req)).toString('utf8')),
  'proxy parseBody (now)': async (req) => (await parseBody(await rawBytes(req), 'application/json')).json,
};

export async function run(): Promise<void> {
  // A retained heap of small objects, as a gateway process holds (caches, modules, pools).
  const retained: unknown[] = [];
  for (let i = 0; i < HEAP_MB * 8_000; i++) retained.push({ i, s: `k${i}`, a: [i] });
  const words = 'the quarterly report shows steady growth across every region and product line ';
  const body = Buffer.from(JSON.stringify({ operation: 'generate.text', messages: [{ role: 'user', content: words.repeat(Math.floor((LIMIT - 1024) / words.length)) }] }));
  let current: Reader = readers['model-json (now)'];
  const server = http.createServer(async (req, res) => {
    const v = (await current(req)) as { messages?: { content: string }[] };
    res.end(String(v.messages?.[0].content.length ?? -1));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  const send = () =>
    new Promise<string>((resolve, reject) => {
      const req = http.request({ port, host: '127.0.0.1', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
        let t = '';
        res.on('data', (c) => (t += c));
        res.on('end', () => resolve(t));
      });
      req.on('error', reject);
      req.end(body);
    });
  const names = Object.keys(readers);
  const maxDelay: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const took: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = -1; round < ROUNDS; round++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(k + Math.max(0, round)) % names.length];
      current = readers[name];
      const h = monitorEventLoopDelay({ resolution: 1 });
      h.enable();
      const t0 = performance.now();
      const answer = await send();
      const ms = performance.now() - t0;
      // The collections a read brings on may run after it answered: they count too.
      await new Promise((r) => setTimeout(r, TAIL_MS));
      h.disable();
      if (Number(answer) < 1_000_000) throw new Error(`${name} read ${answer}`);
      if (round >= 0) {
        maxDelay[name].push(h.max / 1e6);
        took[name].push(ms);
      }
    }
  }
  server.close();
  console.log(`one ${(body.length / 2 ** 20).toFixed(2)} MiB JSON body per read, ${ROUNDS} rounds interleaved, retained heap ~${HEAP_MB} MB`);
  console.log('reader                      longest loop delay ms: p50 / min / max      read ms p50');
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  for (const n of names) {
    const d = sorted(maxDelay[n]);
    console.log(`${n.padEnd(26)}  ${pct(d, 50).toFixed(1).padStart(8)} / ${d[0].toFixed(1).padStart(6)} / ${d[d.length - 1].toFixed(1).padStart(6)}      ${pct(sorted(took[n]), 50).toFixed(1).padStart(8)}`);
  }
  void retained.length;
}
