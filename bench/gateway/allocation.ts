/**
 * `npm run bench:gateway -- --allocation`: what a governed call allocates, by function (not a test).
 *
 * Starts the bench stack (bench/lib/stack.ts: the compiled build when present) with the inspector
 * open on Tollgate, warms a path up, then runs it at c=32 for BENCH_SECONDS under V8's sampling
 * heap profiler with the objects that minor and major collections freed counted too (the default
 * profile keeps only what is still alive, which leaves out almost everything a request allocates).
 * Prints the bytes allocated per completed request, in total and by the functions and the files
 * that allocated most (self size: a function's own allocations, not its callees').
 *
 *   npm run build && BENCH_SECONDS=6 npm run bench:gateway -- --allocation
 *
 * BENCH_PATHS=proxy,executions (the default) picks the paths; every request is sampled about once
 * per BENCH_SAMPLE_BYTES (default 8192) allocated, so figures below ~1 KB per request are noise.
 */
import path from 'node:path';
import { WebSocket } from 'undici';
import { Teardown } from '../lib/children';
import { load } from '../lib/load';
import { freePort } from '../../scripts/lib/temporal-dev-server';
import { ROOT, startStack } from '../lib/stack';
import { BENCH_BODIES, benchProjects } from '../lib/workload';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const SAMPLE_BYTES = Number(process.env.BENCH_SAMPLE_BYTES ?? 8192);
const PATHS = (process.env.BENCH_PATHS ?? 'proxy,executions').split(',');
const TOP = 25;
const log = (m: string) => console.error(`[bench:gateway --allocation] ${m}`);

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** A Chrome DevTools Protocol session over the inspector's WebSocket. */
async function inspect(port: number): Promise<{ send(method: string, params?: object): Promise<any>; close(): void }> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
  const ws = new WebSocket(targets[0].webSocketDebuggerUrl);
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => resolve());
    ws.addEventListener('error', (e) => reject(new Error(`inspector: ${String((e as { message?: string }).message ?? e.type)}`)));
  });
  let next = 1;
  const waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  ws.addEventListener('message', (m) => {
    const msg = JSON.parse(String(m.data)) as { id?: number; result?: unknown; error?: { message: string } };
    const w = msg.id === undefined ? undefined : waiting.get(msg.id);
    if (!w) return;
    waiting.delete(msg.id!);
    if (msg.error) w.reject(new Error(msg.error.message));
    else w.resolve(msg.result);
  });
  return {
    send: (method, params = {}) =>
      new Promise((resolve, reject) => {
        const id = next++;
        waiting.set(id, { resolve, reject });
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

/** Where a frame's code lives: a package under node_modules, Node's own, or our file. */
function origin(url: string): string {
  if (!url) return '(V8 / native)';
  if (url.startsWith('node:')) return url;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  return path.relative(ROOT, url.replace(/^file:\/\//, ''));
}

function aggregate(root: ProfileNode): { byFunction: Map<string, number>; byOrigin: Map<string, number>; total: number } {
  const byFunction = new Map<string, number>();
  const byOrigin = new Map<string, number>();
  let total = 0;
  const stack = [root];
  while (stack.length) {
    const n = stack.pop()!;
    stack.push(...n.children);
    if (!n.selfSize) continue;
    total += n.selfSize;
    const where = origin(n.callFrame.url);
    const fn = `${n.callFrame.functionName || '(anonymous)'} ${where}${n.callFrame.url ? `:${n.callFrame.lineNumber + 1}` : ''}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + n.selfSize);
    byOrigin.set(where, (byOrigin.get(where) ?? 0) + n.selfSize);
  }
  return { byFunction, byOrigin, total };
}

export async function run(): Promise<void> {
  const teardown = new Teardown();
  teardown.onSignals();
  try {
    const inspectPort = await freePort();
    process.env.BENCH_NODE_FLAGS = [process.env.BENCH_NODE_FLAGS, `--inspect=127.0.0.1:${inspectPort}`].filter(Boolean).join(' ');
    const stack = await startStack({ name: 'allocation', teardown, log });
    const { key } = await benchProjects(stack);
    const auth = { authorization: `Bearer ${key}` };
    const cdp = await inspect(inspectPort);
    teardown.add('inspector', async () => cdp.close());
    await cdp.send('HeapProfiler.enable');
    const paths: Record<string, { url: string; body: unknown }> = {
      proxy: { url: `${stack.tollgateUrl}/v1/proxy/openai/v1/chat/completions`, body: BENCH_BODIES.openai },
      executions: { url: `${stack.tollgateUrl}/v1/executions`, body: BENCH_BODIES.governed },
    };
    for (const name of PATHS) {
      const p = paths[name];
      if (!p) throw new Error(`BENCH_PATHS: unknown path ${name} (proxy, executions)`);
      await load({ url: p.url, body: p.body, headers: auth, connections: 32, seconds: 3 });
      await cdp.send('HeapProfiler.startSampling', { samplingInterval: SAMPLE_BYTES, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
      const run = await load({ url: p.url, body: p.body, headers: auth, connections: 32, seconds: SECONDS });
      const { profile } = (await cdp.send('HeapProfiler.stopSampling')) as { profile: { head: ProfileNode } };
      if (run.errors || run.non2xx) throw new Error(`${name}: ${run.errors} errors, ${run.non2xx} non-2xx responses`);
      const { byFunction, byOrigin, total } = aggregate(profile.head);
      const perRequest = (bytes: number) => (bytes / run.total / 1024).toFixed(1).padStart(7);
      const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, TOP);
      console.log(`\n${name}: ${run.total} requests at c=32 in ${SECONDS} s, ${(total / run.total / 1024).toFixed(1)} KB allocated per request (sampled every ${SAMPLE_BYTES} bytes)`);
      console.log('KB/request  where (files and packages)');
      for (const [where, bytes] of top(byOrigin)) console.log(`${perRequest(bytes)}     ${where}`);
      console.log('KB/request  function (self)');
      for (const [fn, bytes] of top(byFunction)) console.log(`${perRequest(bytes)}     ${fn}`);
    }
  } finally {
    await teardown.run();
  }
}
