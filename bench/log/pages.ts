/**
 * `npm run bench:log -- --pages`: every HTTP request the dashboard's pages make, timed against a
 * Tollgate on a grown database (not a test).
 *
 * The stack (bench/lib/stack.ts) starts on a database loaded first with BENCH_CALLS calls (default
 * 1,000,000) over BENCH_DAYS days (default 30) by the growth bench's loader (bench/lib/call-history.ts:
 * permits, call records, chain rows, one big project holding 70 %), then the call and governance
 * rollups folded over every record as the sequencer folds a round (`foldCalls`, 20,000 records at
 * a time). Then, for the big project, each page's requests run BENCH_READS times (default 100),
 * one at a time, and the bench prints p50 and p95 of the round trip per request (target p95 ≤ 300 ms,
 * issue 43), and exits non-zero when one misses it or answers other than 200. BENCH_KEEP_DB=1 keeps
 * the loaded database; BENCH_PAGES_DB=<name> runs the reads again on such a database (no load, no fold).
 *
 *   BENCH_CALLS=1000000 npm run bench:log -- --pages
 */
import { Teardown } from '../lib/children';
import { loadCallHistory, type CallHistory } from '../lib/call-history';
import { pct } from '../lib/load';
import { BENCH_MASTER_KEY, startStack } from '../lib/stack';
import { createApiKey } from '../../src/db/repositories/api-keys';
import { foldCalls } from '../../src/db/repositories/call-rollup';
import type { Db } from '../../src/db/pool';

const CALLS = Number(process.env.BENCH_CALLS ?? 1_000_000);
const DAYS = Number(process.env.BENCH_DAYS ?? 30);
const READS = Number(process.env.BENCH_READS ?? 100);
const KEPT_DB = process.env.BENCH_PAGES_DB;
const TARGET_P95_MS = 300;
const FOLD_BATCH = 20_000;
const log = (m: string) => console.error(`[bench:log --pages] ${m}`);

/** One request a page makes: its page, a name, and the path (with query) for the i-th read. */
type PageRequest = [page: string, name: string, path: (i: number) => string];

/** The rollups as the sequencer leaves them: every record folded (the loader writes no rollup rows). */
async function foldAll(db: Db): Promise<number> {
  let after = '';
  let n = 0;
  for (;;) {
    const { rows } = await db.query<{ project_id: string; id: string }>('SELECT project_id, id FROM calls WHERE id > $1 ORDER BY id LIMIT $2', [after, FOLD_BATCH]);
    if (rows.length === 0) return n;
    await foldCalls(db, rows.map((r) => r.project_id), rows.map((r) => r.id));
    n += rows.length;
    after = rows[rows.length - 1].id;
  }
}

/** What the reads need of a history loaded by an earlier run: the big project, its keys and a call. */
async function keptHistory(db: Db): Promise<CallHistory> {
  const big = (await db.query<{ project_id: string; n: number }>('SELECT project_id, count(*)::int AS n FROM calls GROUP BY 1 ORDER BY 2 DESC LIMIT 1')).rows[0];
  const keys = await db.query<{ id: string }>("SELECT id FROM api_keys WHERE project_id = $1 AND scope = 'client' ORDER BY id", [big.project_id]);
  const call = await db.query<{ id: string }>("SELECT id FROM calls WHERE project_id = $1 AND status = 'completed' AND created_at < now() - interval '1 day' LIMIT 1", [big.project_id]);
  return { projects: [{ id: big.project_id, name: 'big', calls: big.n, leaves: 0, keyIds: keys.rows.map((r) => r.id) }], sampleIds: call.rows.map((r) => r.id) } as unknown as CallHistory;
}

/** The dashboard's windows (dashboard/src/pages/Overview.tsx): the Overview ends them at a bucket's end, Governance at now. */
const WINDOWS = [
  ['1h', 3600, 60],
  ['24h', 86400, 3600],
  ['7d', 7 * 86400, 3600],
] as const;

function requests(h: CallHistory, ids: { call: string; denied: string; deniedPermit: string; failed: string; workflow: string | null }): PageRequest[] {
  const big = h.projects[0];
  const q = (params: Record<string, string | number>) => new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();
  const overview = WINDOWS.map(([label, seconds, bucket]): PageRequest => [
    'Overview',
    `metrics/calls ${label}`,
    () => {
      const to = Math.ceil(Date.now() / (bucket * 1000)) * bucket * 1000;
      return `/v1/metrics/calls?${q({ from: new Date(to - seconds * 1000).toISOString(), to: new Date(to).toISOString(), bucket_seconds: bucket })}`;
    },
  ]);
  const governance = WINDOWS.map(([label, seconds]): PageRequest => [
    'Governance',
    `metrics/governance ${label}`,
    () => `/v1/metrics/governance?${q({ from: new Date(Date.now() - seconds * 1000).toISOString(), to: new Date().toISOString() })}`,
  ]);
  return [
    ['Calls', 'calls, first page', () => `/v1/calls?${q({ limit: 50 })}`],
    ['Calls', 'calls status=failed', () => `/v1/calls?${q({ limit: 50, status: 'failed' })}`],
    ['Calls', 'calls status=denied', () => `/v1/calls?${q({ limit: 50, status: 'denied' })}`],
    ['Calls', 'calls provider=anthropic', () => `/v1/calls?${q({ limit: 50, provider: 'anthropic' })}`],
    ['Calls', 'calls key', (i) => `/v1/calls?${q({ limit: 50, key_id: big.keyIds[i % big.keyIds.length] })}`],
    ['Calls', 'calls last 24 h', () => `/v1/calls?${q({ limit: 50, created_at_gte: new Date(Date.now() - 86400_000).toISOString() })}`],
    ['Calls', 'permits decision=review', () => `/v1/permits?${q({ decision: 'review', limit: 100 })}`],
    ['Call', 'calls/{id}', () => `/v1/calls/${ids.call}`],
    ['Call', 'timeline of a call', () => `/v1/requests/${ids.call}/timeline`],
    ['Call', 'timeline of a failed call', () => `/v1/requests/${ids.failed}/timeline`],
    ['Call', 'calls/{id} denied', () => `/v1/calls/${ids.denied}`],
    ['Call', 'permits/{id} of a denial', () => `/v1/permits/${ids.deniedPermit}`],
    ...overview,
    ...governance,
    ['Governance', 'workflows status=active', () => `/v1/workflows?${q({ status: 'active', limit: 100 })}`],
    ['Intents', 'workflows', () => `/v1/workflows?${q({ limit: 100 })}`],
    ...(ids.workflow ? [['Intents', 'workflows/{id}', () => `/v1/workflows/${ids.workflow}`] as PageRequest] : []),
    ['Spend', 'cost-forecast', () => `/v1/projects/${big.id}/cost-forecast`],
    ['Spend', 'usage', () => `/v1/projects/${big.id}/usage`],
    ['Spend', 'policy', () => `/v1/projects/${big.id}/policy`],
  ];
}

export async function run(): Promise<void> {
  const teardown = new Teardown();
  let failed = false;
  try {
    let history: CallHistory | null = null;
    const stack = await startStack({
      name: 'pages',
      teardown,
      log,
      database: KEPT_DB,
      beforeTollgate: async (db, databaseUrl) => {
        if (KEPT_DB) {
          history = await keptHistory(db);
          return;
        }
        history = await loadCallHistory(databaseUrl, { env: 'production', masterKey: BENCH_MASTER_KEY, databaseUrl }, { calls: CALLS, days: DAYS, now: new Date(), log });
        const t = performance.now();
        const n = await foldAll(db);
        await db.query('VACUUM ANALYZE call_rollup');
        await db.query('VACUUM ANALYZE governance_rollup');
        await db.query('VACUUM ANALYZE usage_rollup');
        log(`${n} records folded into the call, governance and usage rollups in ${((performance.now() - t) / 1000).toFixed(0)} s`);
      },
    });
    const h = history as CallHistory | null;
    if (!h) throw new Error('the history was not loaded');
    const big = h.projects[0];
    const { key } = await createApiKey(stack.db, { projectId: big.id, scope: 'admin', name: 'bench pages' });
    const one = async (sql: string) => (await stack.db.query<{ id: string; permit_id: string }>(sql, [big.id])).rows[0];
    const call = h.sampleIds[Math.floor(h.sampleIds.length / 2)];
    const denied = await one("SELECT id, permit_id FROM calls WHERE project_id = $1 AND status = 'denied' ORDER BY created_at DESC LIMIT 1");
    const failedCall = await one("SELECT id, permit_id FROM calls WHERE project_id = $1 AND status = 'failed' ORDER BY created_at DESC LIMIT 1");
    const workflow = (await stack.db.query<{ workflow_id: string }>('SELECT workflow_id FROM intents WHERE project_id = $1 LIMIT 1', [big.id]).catch(() => ({ rows: [] }))).rows[0]?.workflow_id ?? null;
    const list = requests(h, { call, denied: denied.id, deniedPermit: denied.permit_id, failed: failedCall.id, workflow });

    console.log(`\nEvery dashboard request, ${READS} reads each, one at a time, on ${CALLS} calls over ${DAYS} days (the big project: ${big.calls}):\n`);
    console.log(`${'page'.padEnd(12)}${'request'.padEnd(30)}${'p50 ms'.padStart(9)}${'p95 ms'.padStart(9)}${'max ms'.padStart(9)}`);
    for (const [page, name, path] of list) {
      const times: number[] = [];
      for (let i = 0; i < READS; i++) {
        const t = performance.now();
        const res = await fetch(`${stack.tollgateUrl}${path(i)}`, { headers: { authorization: `Bearer ${key}` } });
        const text = await res.text();
        times.push(performance.now() - t);
        if (res.status !== 200) throw new Error(`GET ${path(i)}: ${res.status} ${text.slice(0, 300)}`);
      }
      times.sort((a, b) => a - b);
      const p95 = pct(times, 95);
      if (p95 > TARGET_P95_MS) failed = true;
      console.log(`${page.padEnd(12)}${name.padEnd(30)}${pct(times, 50).toFixed(1).padStart(9)}${p95.toFixed(1).padStart(9)}${times[times.length - 1].toFixed(1).padStart(9)}${p95 > TARGET_P95_MS ? '  > target' : ''}`);
    }
  } finally {
    await teardown.run();
  }
  if (failed) process.exitCode = 1;
}
