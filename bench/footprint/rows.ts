/**
 * `npm run bench:footprint`: what one allowed governed call leaves in PostgreSQL.
 *
 * Starts the bench stack (bench/lib/stack.ts), warms up one project, then sends exactly BENCH_CALLS
 * calls (default 10,000) at C concurrent callers (default 32) to BENCH_ROUTE (`executions`, the
 * default, or `proxy`: the openai proxy). Before and after, once the event-chain sequencer has
 * chained everything and every backend has flushed its statistics, it reads each table's
 * `pg_total_relation_size` (heap, TOAST and indexes) and its inserted, updated and deleted rows
 * from `pg_stat_user_tables`, and prints both per call, table by table and in total.
 *
 *   BENCH_CALLS=10000 C=32 npm run bench:footprint
 *
 * These are counts, not timings: they do not move with the machine's speed. Background work the
 * calls cause (chaining, checkpoints) is part of the figure, as it is part of the disk they fill.
 *
 * While the calls run, the bench runs a plain VACUUM of the database every BENCH_VACUUM_MS (default
 * 2000; 0 turns it off), as autovacuum does on a production server: space of deleted rows and of
 * superseded row versions is then reused instead of counted as growth. It says whether the server's
 * own autovacuum is on (a development server may run without it).
 */
import { Teardown } from '../lib/children';
import { load } from '../lib/load';
import { startStack } from '../lib/stack';
import type { Db } from '../../src/db/pool';
import { BENCH_BODIES } from '../lib/workload';

const CALLS = Number(process.env.BENCH_CALLS ?? 10_000);
const CONCURRENCY = Number(process.env.C ?? 32);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 200);
const ROUTE = process.env.BENCH_ROUTE ?? 'executions';
// PostgreSQL (15+) flushes an idle backend's statistics within PGSTAT_IDLE_INTERVAL (10 s).
const STATS_FLUSH_MS = 11_000;
const VACUUM_MS = Number(process.env.BENCH_VACUUM_MS ?? 2000);
const log = (m: string) => console.error(`[bench:footprint] ${m}`);

interface TableFigures {
  bytes: number;
  ins: number;
  upd: number;
  del: number;
}

async function snapshot(db: Db): Promise<Map<string, TableFigures>> {
  const { rows } = await db.query<{ name: string; bytes: string; ins: string; upd: string; del: string }>(
    `SELECT relname AS name, pg_total_relation_size(relid)::text AS bytes,
            n_tup_ins::text AS ins, n_tup_upd::text AS upd, n_tup_del::text AS del
       FROM pg_stat_user_tables`,
  );
  return new Map(rows.map((r) => [r.name, { bytes: Number(r.bytes), ins: Number(r.ins), upd: Number(r.upd), del: Number(r.del) }]));
}

/** Waits until the sequencer has chained every event, then until every backend's statistics are flushed. */
async function settle(db: Db): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const { rows } = await db.query<{ n: string }>('SELECT count(*)::text AS n FROM event_chain_pending');
    if (rows[0].n === '0') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, STATS_FLUSH_MS));
  await db.query('SELECT pg_stat_clear_snapshot()');
}

/** What one call's rows hold: the average stored size of a row and of its widest columns. */
async function printRowSizes(db: Db): Promise<void> {
  const columns: Record<string, string[]> = {
    calls: ['envelope', 'lifecycle'],
    permits: ['decision_details', 'metadata', 'actions', 'reservation_periods', 'closing'],
    event_chain: ['prev_hash', 'hash', 'leaf_hash'],
  };
  console.log(`\naverage stored bytes per row (pg_column_size):`);
  for (const [table, cols] of Object.entries(columns)) {
    const parts = cols.map((c) => `coalesce(avg(pg_column_size(t.${c})), 0)::int AS ${c}`).join(', ');
    const { rows } = await db.query<Record<string, number>>(`SELECT avg(pg_column_size(t.*))::int AS row, ${parts} FROM ${table} t`);
    console.log(`${table.padEnd(14)} row ${rows[0].row ?? 0}; ${cols.map((c) => `${c} ${rows[0][c]}`).join(', ')}`);
  }
}

export async function run(): Promise<void> {
  const teardown = new Teardown();
  teardown.onSignals();
  try {
    const stack = await startStack({ name: 'footprint', teardown, log });
    const { key } = await stack.newProjectKey('footprint');
    const url = ROUTE === 'proxy' ? `${stack.tollgateUrl}/v1/proxy/openai/v1/chat/completions` : `${stack.tollgateUrl}/v1/executions`;
    const body = ROUTE === 'proxy' ? BENCH_BODIES.openai : BENCH_BODIES.governed;
    const headers = { authorization: `Bearer ${key}` };
    const run = (amount: number) => load({ url, body, headers, connections: CONCURRENCY, seconds: 0, amount, timeoutSeconds: 30 });

    log(`warm-up: ${WARMUP} calls`);
    await run(WARMUP);
    await settle(stack.db);
    const before = await snapshot(stack.db);
    const autovacuum = (await stack.db.query<{ setting: string }>("SELECT setting FROM pg_settings WHERE name = 'autovacuum'")).rows[0].setting;
    log(`${CALLS} calls to ${ROUTE} at c=${CONCURRENCY}; server autovacuum ${autovacuum}; the bench vacuums ${VACUUM_MS > 0 ? `every ${VACUUM_MS} ms` : 'never'}`);
    let vacuuming = VACUUM_MS > 0;
    const vacuumLoop = (async () => {
      while (vacuuming) {
        await new Promise((res) => setTimeout(res, VACUUM_MS));
        if (vacuuming) await stack.db.query('VACUUM');
      }
    })();
    const r = await run(CALLS).finally(() => {
      vacuuming = false;
    });
    await vacuumLoop;
    if (VACUUM_MS > 0) await stack.db.query('VACUUM');
    const ok = r.statusCodes['200'] ?? 0;
    if (ok !== CALLS) throw new Error(`expected ${CALLS} answers 200, got ${JSON.stringify(r.statusCodes)} (errors ${r.errors}, timeouts ${r.timeouts})`);
    await settle(stack.db);
    const after = await snapshot(stack.db);

    const rows: (TableFigures & { table: string })[] = [];
    for (const [table, a] of after) {
      const b = before.get(table) ?? { bytes: 0, ins: 0, upd: 0, del: 0 };
      const d = { table, bytes: (a.bytes - b.bytes) / CALLS, ins: (a.ins - b.ins) / CALLS, upd: (a.upd - b.upd) / CALLS, del: (a.del - b.del) / CALLS };
      if (d.bytes !== 0 || d.ins !== 0 || d.upd !== 0 || d.del !== 0) rows.push(d);
    }
    rows.sort((x, y) => y.bytes - x.bytes || y.ins + y.upd + y.del - (x.ins + x.upd + x.del));
    const total = rows.reduce((t, d) => ({ bytes: t.bytes + d.bytes, ins: t.ins + d.ins, upd: t.upd + d.upd, del: t.del + d.del }), { bytes: 0, ins: 0, upd: 0, del: 0 });
    const f = (n: number, digits = 2) => n.toFixed(digits).padStart(9);
    console.log(`\nPer allowed call, ${CALLS} calls to ${ROUTE} at c=${CONCURRENCY} on one project (${r.rps.toFixed(0)} calls/s):\n`);
    console.log(`${'table'.padEnd(28)}${'bytes'.padStart(9)}${'inserts'.padStart(9)}${'updates'.padStart(9)}${'deletes'.padStart(9)}`);
    for (const d of rows) console.log(`${d.table.padEnd(28)}${f(d.bytes, 0)}${f(d.ins)}${f(d.upd)}${f(d.del)}`);
    console.log(`${'total'.padEnd(28)}${f(total.bytes, 0)}${f(total.ins)}${f(total.upd)}${f(total.del)}`);
    console.log(`\nplain VACUUM ${VACUUM_MS > 0 ? `every ${VACUUM_MS} ms and once at the end` : 'never run'}; server autovacuum ${autovacuum}`);
    console.log(`row writes per call: ${(total.ins + total.upd + total.del).toFixed(2)}; bytes per call: ${total.bytes.toFixed(0)}`);
    await printRowSizes(stack.db);
  } finally {
    await teardown.run();
  }
}
