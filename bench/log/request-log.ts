/**
 * `npm run bench:log` (its default mode, `--request-log`): pages of the request log (`GET /v1/calls`'s query, src/db/repositories/calls.ts)
 * on a project with BENCH_ROWS calls (default 5,000,000) recorded over 30 days.
 *
 * The calls are written straight into `calls` by one INSERT … SELECT (the envelope left empty:
 * the log never reads it), with a mix an operator would see: 97 % completed, 2 % failed, 1 % denied;
 * five providers, ten models (one of them rare, 0.1 %); twenty API keys; 1 % of calls joined to one
 * of 100 intents; 0.5 % from jobs; one row in eleven belongs to one of nine other projects. Then each
 * query shape runs BENCH_PAGES times (default 200, pages of 50, cursors at random points in the
 * 30 days) and the bench prints p50 and p99 of the query's time as PostgreSQL reports it
 * (EXPLAIN ANALYZE's execution time is not used: it adds instrumentation; this is the client's
 * round trip on a local socket).
 *
 * The call rollup is then filled by the fold the chain sequencer runs on the records it chains
 * (`foldCalls`, BENCH_FOLD_BATCH records at a time, default 20,000), and the Overview's aggregates
 * (`GET /v1/metrics/calls`, `callMetrics`) run BENCH_METRIC_RUNS times (default 20) per window, each
 * window ending at a random point in the 30 days, with the dashboard's bucket size for it: ending at
 * a bucket's end as the dashboard's windows do, and at any millisecond; the time is the whole answer.
 *
 *   BENCH_ROWS=5000000 npm run bench:log
 */
import { encodeCursor } from '../../src/api/cursor';
import { callMetrics } from '../../src/db/repositories/call-metrics';
import { foldCalls } from '../../src/db/repositories/call-rollup';
import { listCalls, type CallFilters } from '../../src/db/repositories/calls';
import { createProject } from '../../src/db/repositories/projects';
import { onThrowawayDatabase } from '../lib/event-log';
import { pct } from '../lib/load';

const ROWS = Number(process.env.BENCH_ROWS ?? 5_000_000);
const PAGES = Number(process.env.BENCH_PAGES ?? 200);
const METRIC_RUNS = Number(process.env.BENCH_METRIC_RUNS ?? 20);
const FOLD_BATCH = Number(process.env.BENCH_FOLD_BATCH ?? 20_000);
const DAYS = 30;
const log = (m: string) => console.error(`[bench:log --request-log] ${m}`);

export async function run(): Promise<void> {
  await onThrowawayDatabase('call_log', async ({ db, projectId }) => {
    const others = await Promise.all(Array.from({ length: 9 }, (_, i) => createProject(db, { name: `other ${i}`, plan: 'production' })));
    const projects = [projectId, ...others.map((o) => o.id)];
    const t0 = performance.now();
    // Row i: the bench project's but for one in eleven; created_at spread evenly over DAYS ending now.
    await db.query(
      `INSERT INTO calls (id, project_id, route, operation, mode, status, status_code, permit_id, provider, model,
                               intent_id, key_id, job_id, input_tokens, output_tokens, cost_usd_micros, error_code,
                               created_at, completed_at, duration_ms, envelope)
       SELECT 'exec_req_' || lpad(to_hex(i), 32, '0'),
              CASE WHEN i % 11 = 10 THEN ($2::text[])[2 + i % 9] ELSE ($2::text[])[1] END,
              (ARRAY['executions', 'executions', 'proxy', 'execute'])[1 + i % 4], 'generate.text', 'sync',
              CASE WHEN i % 100 < 97 THEN 'completed' WHEN i % 100 < 99 THEN 'failed' ELSE 'denied' END,
              CASE WHEN i % 100 < 97 THEN 200 WHEN i % 100 < 99 THEN 502 ELSE 403 END,
              'permit_' || lpad(to_hex(i), 32, '0'),
              (ARRAY['openai', 'anthropic', 'google', 'deepseek', 'mistral'])[1 + i % 5],
              CASE WHEN i % 1000 = 7 THEN 'rare-model' ELSE 'model-' || (i % 9) END,
              CASE WHEN i % 100 = 42 THEN 'intent-' || (i / 100 % 100) END,
              'key_' || (i % 20),
              CASE WHEN i % 200 = 3 THEN 'job_' || i END,
              100, 20, 150, CASE WHEN i % 100 >= 97 THEN 'provider_error' END,
              now() - make_interval(secs => ($1::bigint - i) * ${DAYS * 86400}.0 / $1::bigint),
              now() - make_interval(secs => ($1::bigint - i) * ${DAYS * 86400}.0 / $1::bigint) + interval '300 ms',
              300, '{}'::jsonb
         FROM generate_series(1, $1::bigint) AS i`,
      [ROWS, projects],
    );
    await db.query('VACUUM ANALYZE calls');
    const { rows: size } = await db.query<{ mb: string }>("SELECT (pg_total_relation_size('calls') / 1048576)::text AS mb");
    log(`${ROWS} calls written and analysed in ${((performance.now() - t0) / 1000).toFixed(0)} s (calls: ${size[0].mb} MiB)`);

    // The call rollup, filled as the chain sequencer fills it: the same fold over the records, a
    // batch at a time (a sequencer round folds the records it chains).
    const t1 = performance.now();
    let after = '';
    for (;;) {
      const { rows } = await db.query<{ project_id: string; id: string }>('SELECT project_id, id FROM calls WHERE id > $1 ORDER BY id LIMIT $2', [after, FOLD_BATCH]);
      if (rows.length === 0) break;
      await foldCalls(db, rows.map((r) => r.project_id), rows.map((r) => r.id));
      after = rows[rows.length - 1].id;
    }
    await db.query('VACUUM ANALYZE call_rollup');
    const { rows: rollup } = await db.query<{ n: string; mb: string }>("SELECT count(*)::text AS n, (pg_total_relation_size('call_rollup') / 1048576)::text AS mb FROM call_rollup");
    log(`rollup folded in ${((performance.now() - t1) / 1000).toFixed(0)} s: ${rollup[0].n} rows, ${rollup[0].mb} MiB`);

    const randomCursor = () => {
      const t = new Date(Date.now() - Math.random() * DAYS * 86400_000).toISOString().replace('Z', '000Z');
      return { createdAt: t, id: 'exec_req_f' };
    };
    const shapes: [string, Omit<CallFilters, 'limit' | 'after'>, boolean][] = [
      ['first page', {}, false],
      ['a page at a random point', {}, true],
      ['status=failed (2 %)', { match: { status: 'failed' } }, true],
      ['status=denied (1 %)', { match: { status: 'denied' } }, true],
      ['provider=anthropic (20 %)', { match: { provider: 'anthropic' } }, true],
      ['model=model-3 (10 %)', { match: { model: 'model-3' } }, true],
      ['model=rare-model (0.1 %)', { match: { model: 'rare-model' } }, false],
      ['key_id=key_7 (5 %)', { match: { key_id: 'key_7' } }, true],
      ['workflow_id=intent-5 (0.01 %)', { match: { workflow_id: 'intent-5' } }, false],
      ['job_id (one call)', { match: { job_id: 'job_203' } }, false],
      ['route=proxy, status=completed', { match: { route: 'proxy', status: 'completed' } }, true],
      ['last 24 h', { createdAtGte: new Date(Date.now() - 86400_000) }, false],
    ];
    console.log(`\nA page of 50 from ${ROWS} calls (${((ROWS * 10) / 11).toFixed(0)} in the listed project), ${PAGES} pages per shape:\n`);
    console.log(`${'query'.padEnd(34)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'rows'.padStart(7)}`);
    for (const [name, filters, atRandom] of shapes) {
      const times: number[] = [];
      let n = 0;
      for (let i = 0; i < PAGES; i++) {
        const after = atRandom ? randomCursor() : undefined;
        const t = performance.now();
        const rows = await listCalls(db, projectId, { ...filters, after, limit: 51 });
        times.push(performance.now() - t);
        n = rows.length;
        // The cursor a page hands on round-trips through the API's encoding.
        if (rows.length) encodeCursor({ t: rows[rows.length - 1].cursor_ts, id: rows[rows.length - 1].id });
      }
      times.sort((a, b) => a - b);
      console.log(`${name.padEnd(34)}${pct(times, 50).toFixed(2).padStart(9)}${pct(times, 99).toFixed(2).padStart(9)}${String(n).padStart(7)}`);
    }

    // The dashboard's windows and bucket sizes, each ending at the end of a bucket as the dashboard's
    // do (dashboard/src/pages/Overview.tsx); then the same windows ending at any millisecond, as an
    // API caller may ask (their sub-minute edges and bucket boundaries read from the records).
    const windows: [string, number, number, boolean][] = [
      ['last hour, 60 s buckets', 3600, 60, true],
      ['24 h, 300 s buckets', 86400, 300, true],
      ['7 days, 3600 s buckets', 7 * 86400, 3600, true],
      ['last hour, unaligned', 3600, 60, false],
      ['24 h, unaligned', 86400, 300, false],
      ['7 days, unaligned', 7 * 86400, 3600, false],
    ];
    console.log(`\nThe Overview's aggregates (series, totals, by model, by key), ${METRIC_RUNS} runs per window:\n`);
    console.log(`${'window'.padEnd(34)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'calls'.padStart(9)}`);
    for (const [name, seconds, bucket, aligned] of windows) {
      const times: number[] = [];
      let n = 0;
      for (let i = 0; i < METRIC_RUNS; i++) {
        const end = Date.now() - Math.random() * (DAYS * 86400 - seconds - bucket) * 1000;
        const to = new Date(aligned ? Math.ceil(end / (bucket * 1000)) * bucket * 1000 : end);
        const t = performance.now();
        const m = await callMetrics(db, projectId, { from: new Date(to.getTime() - seconds * 1000), to, bucketSeconds: bucket });
        times.push(performance.now() - t);
        n = m.totals.calls;
      }
      times.sort((a, b) => a - b);
      console.log(`${name.padEnd(34)}${pct(times, 50).toFixed(2).padStart(9)}${pct(times, 99).toFixed(2).padStart(9)}${String(n).padStart(9)}`);
    }
  });
}
