/**
 * Intent call reservations benchmark (not a test): `npm run bench:intents`.
 *
 * Starts its own Temporal dev server and a throwaway PostgreSQL database (like the jest global
 * setup), one in-process Tollgate (API + worker), declares intents over HTTP and drives
 * `IntentReservations.reserveCall` — the call the API makes for every governed request with
 * X-Svc-Workflow-Id: calls taken locally from a lease the intent workflow grants:
 *
 *   1. ceiling: 1,000 concurrent reservations against one intent with max_calls 600 → exactly 600,
 *      from one process and from two processes (two clients, each with its own holder id and
 *      revocation listener) sharing the intent.
 *   2. c=1: one caller reserving in a loop: the latency a call joined to an intent adds.
 *   3. hot intent: BENCH_CALLERS (default 100) concurrent callers for BENCH_SECONDS (default 10):
 *      grants/s, p50/p99/max latency; then the same with continue-as-new every 10 handled Updates
 *      (runs counted) to show whether reservations stall around it. Each caller yields one
 *      event-loop turn between reservations (a real request does I/O; a loop of resolved promises
 *      would starve the process's I/O, the lease renewals included).
 *
 * Targets (issue 22): ≥ 20,000 grants/s at 100 callers, p99 ≤ 10 ms, max ≤ 100 ms, c=1 p50 ≤ 1 ms,
 * exactly 600 granted (one and two processes), counters consistent. Exits non-zero when missed.
 */
import os from 'node:os';
import { startInProcessTollgate } from './lib/in-process';
import { pct } from './lib/load';
import { createProject } from '../src/db/repositories/projects';
import { createApiKey } from '../src/db/repositories/api-keys';
import { systemClock } from '../src/clock';
import { declareIntent } from '../src/intents/service';
import { IntentReservations } from '../src/intents/reservations';
import { stateQuery } from '../workflows/intent-messages';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CALLERS = Number(process.env.BENCH_CALLERS ?? 100);
const C1_SECONDS = Number(process.env.BENCH_C1_SECONDS ?? 3);

async function main(): Promise<void> {
  const log = (m: string) => process.stdout.write(`${m}\n`);
  const { tg, config, logger, databaseUrl, close } = await startInProcessTollgate({ name: 'intents', log });
  const clients: IntentReservations[] = [];
  const client = (holder?: string) => {
    const c = new IntentReservations({ client: tg.temporal.client, db: tg.db, databaseUrl, ...(holder ? { holder } : {}) });
    clients.push(c);
    return c;
  };
  let failed = false;
  const check = (ok: boolean) => {
    if (!ok) failed = true;
    return ok ? 'met' : 'MISSED';
  };
  try {
    log(`load average at start: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} (${os.cpus().length} CPUs)`);
    const project = await createProject(tg.db, { name: 'bench', plan: 'production' });
    const { key } = await createApiKey(tg.db, { projectId: project.id, scope: 'client' });
    const declare = async (workflow_id: string, max_calls: number) => {
      const res = await fetch(`${tg.url}/v1/workflows`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ workflow_id, intent: { max_calls } }),
      });
      if (res.status !== 201) throw new Error(`declare ${workflow_id}: ${res.status} ${await res.text()}`);
    };
    const svc = { db: tg.db, config, clock: systemClock, logger, temporal: { client: tg.temporal.client, taskQueue: config.temporal.taskQueue } };
    const liveState = (workflowId: string) => tg.temporal.client.workflow.getHandle(`intent:${project.id}:${workflowId}`).query(stateQuery);

    // 1. Ceiling under 1,000 concurrent reservations: one process, then two sharing the intent.
    for (const [label, procs] of [
      ['one process', [client('p1')]],
      ['two processes', [client('p2a'), client('p2b')]],
    ] as const) {
      const id = `bench-ceiling-${label.replace(/[^a-z]+/g, '-')}`;
      await declare(id, 600);
      const sent0 = procs.reduce((s, c) => s + c.updatesSent, 0);
      const t0 = performance.now();
      const outcomes = await Promise.all(Array.from({ length: 1000 }, (_, i) => procs[i % procs.length].reserveCall(project.id, id)));
      const ms = performance.now() - t0;
      const granted = outcomes.filter((o) => o.granted).length;
      const denied = outcomes.filter((o) => !o.granted && o.reason === 'ceiling_reached').length;
      const st = await liveState(id);
      log(
        `ceiling (${label}): 1000 concurrent, max_calls 600 → granted ${granted}, denied ceiling_reached ${denied}, workflow counter ${st.actualCalls}, ` +
          `${ms.toFixed(0)} ms, ${procs.reduce((s, c) => s + c.updatesSent, 0) - sent0} Updates → exactly 600 ${check(granted === 600 && st.actualCalls === 600)}`,
      );
    }

    // 2. c=1: one caller in a loop.
    const c1 = async () => {
      const id = 'bench-c1';
      await declare(id, 1_000_000_000);
      const r = client();
      for (let i = 0; i < 50; i++) await r.reserveCall(project.id, id);
      const lat: number[] = [];
      const end = performance.now() + C1_SECONDS * 1000;
      while (performance.now() < end) {
        const s = performance.now();
        const o = await r.reserveCall(project.id, id);
        lat.push(performance.now() - s);
        if (!o.granted) throw new Error('c=1 reservation denied');
      }
      lat.sort((a, b) => a - b);
      return { n: lat.length, p50: pct(lat, 50), p99: pct(lat, 99), max: lat[lat.length - 1] };
    };
    const c1l = await c1();
    log(`c=1: ${c1l.n} reservations, p50 ${c1l.p50.toFixed(3)} ms, p99 ${c1l.p99.toFixed(3)} ms, max ${c1l.max.toFixed(1)} ms → added p50 ≤ 1 ms ${check(c1l.p50 <= 1)}`);

    // 3. Hot intent: CALLERS concurrent callers for SECONDS.
    const hot = async (label: string, canAfterUpdates?: number) => {
      const id = `bench-hot-${label}`;
      if (canAfterUpdates) await declareIntent(svc, { projectId: project.id, keyId: 'bench' }, { workflow_id: id, intent: { max_calls: 1_000_000_000 } }, { canAfterUpdates });
      else await declare(id, 1_000_000_000);
      const r = client();
      await Promise.all(Array.from({ length: CALLERS }, () => r.reserveCall(project.id, id)));
      const run0 = (await liveState(id)).run;
      const updates0 = r.updatesSent;
      const waited0 = r.waited;
      r.updateMs.length = 0;
      const latencies: number[] = [];
      let granted = 0;
      const deadline = performance.now() + SECONDS * 1000;
      const start = performance.now();
      // Waits after the first 2 s (the lease has grown to the callers' rate) vs during the ramp-up.
      let waitedAt2s = -1;
      const snap = setTimeout(() => (waitedAt2s = r.waited), 2000);
      await Promise.all(
        Array.from({ length: CALLERS }, async () => {
          while (performance.now() < deadline) {
            const s = performance.now();
            const o = await r.reserveCall(project.id, id);
            latencies.push(performance.now() - s);
            if (o.granted) granted++;
            // A real request does I/O between reservations: yield one event-loop turn, otherwise
            // callers served from the lease (resolved promises only) starve the loop's I/O.
            await new Promise<void>((res) => setImmediate(res));
          }
        }),
      );
      const elapsed = (performance.now() - start) / 1000;
      clearTimeout(snap);
      latencies.sort((a, b) => a - b);
      const rate = granted / elapsed;
      const um = [...r.updateMs].sort((a, b) => a - b);
      const res = { rate, p50: pct(latencies, 50), p99: pct(latencies, 99), max: latencies[latencies.length - 1], updates: r.updatesSent - updates0, waited: r.waited - waited0 };
      // Every granted call reaches the workflow's counter once the lease is returned.
      await r.close();
      const st = await liveState(id);
      const expected = granted + CALLERS;
      log(
        `hot intent (${label}): ${CALLERS} callers, ${elapsed.toFixed(1)} s → ${granted} granted, ${rate.toFixed(0)} grants/s, ` +
          `p50 ${res.p50.toFixed(3)} ms, p99 ${res.p99.toFixed(3)} ms, max ${res.max.toFixed(1)} ms, ${res.updates} Updates (round trip p50 ${pct(um, 50).toFixed(1)} ms, max ${um[um.length - 1].toFixed(1)} ms), ${res.waited} reservations waited for one (${waitedAt2s < 0 ? '?' : r.waited - waitedAt2s} after the first 2 s), ` +
          `runs ${run0} → ${st.run} (${st.run - run0} continue-as-new); workflow counter ${st.actualCalls} vs granted ${expected} → ${st.actualCalls === expected ? 'consistent' : 'MISMATCH'}`,
      );
      if (st.actualCalls !== expected) failed = true;
      return res;
    };
    const leased = await hot('leases');
    log(`targets (${CALLERS} callers): ≥ 20,000 grants/s ${check(leased.rate >= 20_000)}; p99 ≤ 10 ms ${check(leased.p99 <= 10)}; max ≤ 100 ms ${check(leased.max <= 100)}`);
    const can = await hot('leases-can-every-10', 10);
    log(`continue-as-new every 10 Updates: max ${can.max.toFixed(1)} ms ≤ 100 ms ${check(can.max <= 100)}`);
    log(`load average at end: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await close();
  }
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
