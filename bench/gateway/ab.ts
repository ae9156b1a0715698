/**
 * Two builds of Tollgate side by side (not a test): `npm run bench:gateway -- --ab <checkout>`.
 *
 * For a change to the request path whose effect is smaller than the machine's drift between two
 * `bench:gateway` runs. Starts the bench stack (bench/lib/stack.ts) with this checkout's compiled
 * build ("new") and the compiled build of the checkout given to `--ab` ("base"; e.g. a `git
 * worktree` of the previous commit, built with `npm run build`), both on one database, Temporal and
 * emulator, and Portkey's gateway. Each round runs Portkey, base and new on `/v1/proxy/openai` and
 * `/v1/executions`, at c=32 on one project and at c=1, for BENCH_SECONDS each. Both builds run as
 * API processes beside one worker process of the new build, which runs the maintenance workflows
 * for both: CPU per request is the request path's alone, on equal terms. A path's two builds
 * run back to back, and which of them goes first alternates by round (base-new, new-base, …; the
 * paths' order and Portkey's place alternate too): the second run of a pair meets the database
 * right after the first one's writes (its sequencer backlog, autovacuum), and with the order only
 * rotated the new build came second in four rounds of five. Use an even BENCH_ROUNDS (default 6).
 * Prints per path and build the median req/s, the median of the rounds' new/base ratios, CPU per
 * request (Tollgate's process, PostgreSQL) and c=1 added latency.
 *
 *   BENCH_ROUNDS=6 BENCH_SECONDS=4 npm run bench:gateway -- --ab /tmp/base
 *
 * Both builds must run against the schema of this checkout's migrations (applied once, at start).
 */
import os from 'node:os';
import { Teardown } from '../lib/children';
import { load, loadWithCpu, median, type MeasuredRun as Measured } from '../lib/load';
import { startStack } from '../lib/stack';
import { BENCH_BODIES, benchProjects } from '../lib/workload';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 6));
const log = (m: string) => process.stdout.write(`${m}\n`);

type Build = 'portkey' | 'base' | 'new';

export async function run([baselineDir]: string[]): Promise<void> {
  if (!baselineDir) throw new Error('--ab <directory of the checkout to compare with, built> is required');
  const teardown = new Teardown();
  teardown.onSignals();
  let exitCode = 0;
  try {
    log(`load average at start: ${os.loadavg().map((n) => n.toFixed(2)).join(' ')}`);
    const stack = await startStack({ name: 'ab', teardown, log, portkey: true, baselineDir });
    const { key } = await benchProjects(stack, 0);
    const { openai, governed } = BENCH_BODIES;
    const emulatorBase = `${stack.emulatorUrl}/openai/v1`;
    const urls: Record<Exclude<Build, 'portkey'>, string> = { base: stack.baselineUrl!, new: stack.tollgateUrl };
    const pids: Record<Build, number> = { portkey: stack.portkey!.pid, base: stack.baseline!.pid, new: stack.tollgate.pid };
    type Target = { url: string; body: unknown; headers: Record<string, string> };
    const targets: Record<'proxy' | 'exec', (b: Build) => Target | null> = {
      proxy: (b: Build): Target =>
        b === 'portkey'
          ? { url: `${stack.portkeyUrl}/v1/chat/completions`, body: openai, headers: { authorization: 'Bearer bench', 'x-portkey-provider': 'openai', 'x-portkey-custom-host': emulatorBase } }
          : { url: `${urls[b]}/v1/proxy/openai/v1/chat/completions`, body: openai, headers: { authorization: `Bearer ${key}` } },
      exec: (b: Build) => (b === 'portkey' ? null : { url: `${urls[b]}/v1/executions`, body: governed, headers: { authorization: `Bearer ${key}` } }),
    };
    const measured = (b: Build, o: Parameters<typeof load>[0]): Promise<Measured> => loadWithCpu([pids[b]], o);
    const emulatorC1 = await load({ url: `${emulatorBase}/chat/completions`, body: openai, headers: { authorization: 'Bearer bench' }, connections: 1, seconds: SECONDS });

    log('warm-up…');
    for (const b of ['portkey', 'base', 'new'] as const) for (const path of ['proxy', 'exec'] as const) {
      const t = targets[path](b);
      if (t) await load({ ...t, connections: 8, seconds: 2 });
    }
    const results = new Map<string, Measured[]>();
    const record = (k: string, m: Measured) => results.set(k, [...(results.get(k) ?? []), m]);
    for (let r = 0; r < ROUNDS; r++) {
      for (const [b, path] of roundOrder(r)) {
        for (const c of [32, 1]) {
          const m = await measured(b, { ...targets[path](b)!, connections: c, seconds: SECONDS });
          log(`  round ${r + 1}/${ROUNDS} c=${c} ${b.padEnd(7)} ${path.padEnd(5)} ${m.rps.toFixed(0).padStart(5)} req/s, ${m.cpu.gatewayMs.toFixed(2)} + ${m.cpu.postgresMs.toFixed(2)} ms CPU per request`);
          record(`${c} ${b} ${path}`, m);
        }
      }
    }
    const errors = [...results.values()].flat().reduce((n, m) => n + m.errors + m.non2xx + m.timeouts, 0);
    log(`\n${ROUNDS} rounds of ${SECONDS} s per run; median over rounds; ratio = median of the rounds' new/base (or /portkey) req/s`);
    log('c   path    build     req/s  ×base  ×portkey  cpu ms/req  pg ms/req  added p50 ms (c=1)');
    for (const c of [32, 1]) for (const path of ['proxy', 'exec'] as const) for (const b of ['portkey', 'base', 'new'] as const) {
      const list = results.get(`${c} ${b} ${path}`);
      if (!list) continue;
      const pk = results.get(`${c} portkey proxy`)!;
      const base = results.get(`${c} base ${path}`)!;
      const ratio = (xs: Measured[]) => median(list.map((m, i) => m.rps / Math.max(1e-9, xs[i].rps)));
      log(
        `${String(c).padEnd(3)} ${path.padEnd(7)} ${b.padEnd(8)} ${median(list.map((m) => m.rps)).toFixed(0).padStart(6)}  ${ratio(base).toFixed(2).padStart(5)}  ${ratio(pk).toFixed(2).padStart(8)}` +
          `  ${median(list.map((m) => m.cpu.gatewayMs)).toFixed(2).padStart(10)}  ${median(list.map((m) => m.cpu.postgresMs)).toFixed(2).padStart(9)}  ${(c === 1 ? (median(list.map((m) => m.p50)) - emulatorC1.p50).toFixed(2) : '—').padStart(7)}`,
      );
    }
    log(`errors and non-2xx over every run: ${errors}`);
    if (errors > 0) exitCode = 1;
  } catch (err) {
    console.error(err);
    exitCode = 1;
  } finally {
    await teardown.run();
  }
  process.exit(exitCode);
}

/** Round r's runs: each path's builds back to back, the first of them alternating by round. */
function roundOrder(r: number): [Build, 'proxy' | 'exec'][] {
  const builds: Build[] = r % 2 === 0 ? ['base', 'new'] : ['new', 'base'];
  const paths = Math.floor(r / 2) % 2 === 0 ? (['proxy', 'exec'] as const) : (['exec', 'proxy'] as const);
  const tollgate = paths.flatMap((path) => builds.map((b): [Build, 'proxy' | 'exec'] => [b, path]));
  return r % 2 === 0 ? [['portkey', 'proxy'], ...tollgate] : [...tollgate, ['portkey', 'proxy']];
}

