/**
 * `npm run bench:gateway -- --memory`: where Tollgate's resident memory goes under the gateway bench's load.
 *
 * Starts the bench stack (bench/lib/stack.ts: compiled build when present, prebuilt workflow
 * bundle, NODE_ENV=production), then samples the Tollgate process after start, after each load
 * phase (c=32 for BENCH_SECONDS on the proxy, executions, executions joined to an intent, 32
 * projects; then BENCH_STREAMS streams) and after a pause: RSS and peak from /proc, and V8's view
 * from /metrics (heap used / total, external). Tollgate runs API and worker in one process as
 * `npm run dev` does; BENCH_ROLE=api runs an API process and a worker process (the worker's RSS in
 * its own column).
 * BENCH_NODE_FLAGS passes flags to the Tollgate processes, e.g. "--max-semi-space-size=4";
 * HEAP_GROWING_PERCENT (src/runtime/heap.ts) reaches them through the environment.
 */
import os from 'node:os';
import { load, timeToMarker } from '../lib/load';
import { BENCH_METRICS_TOKEN, rssByMapping, rssMiB, startStack } from '../lib/stack';
import { Teardown } from '../lib/children';
import { BENCH_BODIES, benchProjects } from '../lib/workload';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 20);
const log = (m: string) => console.error(`[bench:gateway --memory] ${m}`);

async function v8Figures(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` } })).text();
  const read = (name: string, label = '') => {
    const line = text.split('\n').find((l) => l.startsWith(`${name}${label}`));
    return line ? Number(line.split(' ').pop()) / 2 ** 20 : NaN;
  };
  return {
    heapUsed: read('nodejs_heap_size_used_bytes'),
    heapTotal: read('nodejs_heap_size_total_bytes'),
    external: read('nodejs_external_memory_bytes'),
    newSpace: read('nodejs_heap_space_size_used_bytes', '{space="new"}'),
    oldSpace: read('nodejs_heap_space_size_used_bytes', '{space="old"}'),
    codeSpace: read('nodejs_heap_space_size_used_bytes', '{space="code"}'),
  };
}

export async function run(): Promise<void> {
  const teardown = new Teardown();
  teardown.onSignals();
  const rows: { phase: string; rss: number; peak: number; workerRss: number; v8: Record<string, number> }[] = [];
  try {
    const stack = await startStack({ name: 'memory', teardown, log });
    const sample = async (phase: string) => {
      const r = rssMiB(stack.tollgate.pid);
      const w = stack.worker ? rssMiB(stack.worker.pid) : null;
      rows.push({ phase, rss: r?.rss ?? NaN, peak: r?.peak ?? NaN, workerRss: w?.rss ?? NaN, v8: await v8Figures(stack.tollgateUrl) });
      log(`${phase}: RSS ${r?.rss.toFixed(0)} MiB`);
    };
    await sample('idle after start');
    const { key, spread } = await benchProjects(stack);
    const { openai, governed } = BENCH_BODIES;
    const auth = { authorization: `Bearer ${key}` };
    const proxyUrl = `${stack.tollgateUrl}/v1/proxy/openai/v1/chat/completions`;
    const execUrl = `${stack.tollgateUrl}/v1/executions`;

    await load({ url: proxyUrl, body: openai, headers: auth, connections: 32, seconds: SECONDS });
    await sample(`proxy c=32 ${SECONDS} s`);
    await load({ url: execUrl, body: governed, headers: auth, connections: 32, seconds: SECONDS });
    await sample(`executions c=32 ${SECONDS} s`);
    {
      const declared = await fetch(`${stack.tollgateUrl}/v1/workflows`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ workflow_id: 'bench-intent', intent: { max_calls: 1_000_000_000 } }),
      });
      if (declared.status !== 201) throw new Error(`declaring the intent answered ${declared.status}`);
      await load({ url: execUrl, body: governed, headers: { ...auth, 'x-svc-workflow-id': 'bench-intent' }, connections: 32, seconds: SECONDS });
      await sample(`exec + intent c=32 ${SECONDS} s`);
    }
    await load({ url: execUrl, body: governed, headers: {}, perConnection: spread, connections: 32, seconds: SECONDS });
    await sample(`32 projects c=32 ${SECONDS} s`);
    for (let i = 0; i < STREAMS; i++) {
      await timeToMarker(proxyUrl, { ...openai, stream: true }, auth, 'data:');
      await timeToMarker(execUrl, { ...governed, mode: 'stream' }, auth, 'event: delta');
    }
    await sample(`${STREAMS} streams × 2`);
    await new Promise((r) => setTimeout(r, 5000));
    await sample('5 s idle after');
    const mappings = rssByMapping(stack.tollgate.pid);

    const f = (v: number) => (Number.isFinite(v) ? v.toFixed(0) : '—');
    console.log(`Tollgate memory, MiB (${stack.worker ? 'API process; worker process in the last column' : 'API and worker in one process'}${process.env.BENCH_NODE_FLAGS ? `, ${process.env.BENCH_NODE_FLAGS}` : ''}; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})`);
    console.log('phase                          RSS   peak  heap used  heap total  new  old  code  external  worker RSS');
    for (const r of rows) {
      console.log(
        `${r.phase.padEnd(28)} ${f(r.rss).padStart(5)} ${f(r.peak).padStart(6)} ${f(r.v8.heapUsed).padStart(10)} ${f(r.v8.heapTotal).padStart(11)} ${f(r.v8.newSpace).padStart(4)} ${f(r.v8.oldSpace).padStart(4)} ${f(r.v8.codeSpace).padStart(5)} ${f(r.v8.external).padStart(9)} ${f(r.workerRss).padStart(11)}`,
      );
    }
    // What the RSS after the pause is made of: V8's heap and malloc's arenas are in [anon].
    console.log(`resident after, by mapping (MiB): ${mappings.slice(0, 8).map((m) => `${m.name} ${m.mib.toFixed(1)}`).join(', ')}`);
  } finally {
    await teardown.run();
  }
}
