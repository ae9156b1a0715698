/**
 * Retention, `integrity verify` and an archive's write path on a grown database, in this process
 * (no gateway, no load): `npm run bench:log -- --retention`.
 *
 * A throwaway database is loaded with BENCH_CALLS calls (default 1,000,000) over BENCH_DAYS days
 * (default 60) by bench/lib/call-history.ts (the growth bench's history: five projects, one with
 * 70 %, the oldest week partition holding one Sunday). BENCH_HISTORY_DB=<name> keeps the loaded
 * database under that name and, when it exists, copies it (`CREATE DATABASE … TEMPLATE`, then the
 * migrations) instead of loading again. Then:
 *
 * 1. `integrity verify` of the big project (`verifyLog`), BENCH_VERIFY_ROUNDS times (default 2: the
 *    copy's pages are read from disk the first time, from the cache after): records/s, this
 *    process's CPU and PostgreSQL's per record.
 * 2. An archive's write path: the big project's first BENCH_ARCHIVE_DAYS days (default 8) written
 *    (`writeArchive`: the compliance export's files streamed into the archive store, then the
 *    bundle) and read back and verified (`verifyStoredArchive`), BENCH_ARCHIVE_ROUNDS times
 *    (default 2), nothing deleted: leaves/s (and the records its manifest counts per second), this
 *    process's CPU and the whole machine's (/proc/stat, every process) per leaf of each. Each round
 *    writes it with the row parts in a worker thread and in the archive's thread, in alternating
 *    order (BENCH_ARCHIVE_ROWS=worker or =thread: one of them).
 * 3. Retention of the history's first day (`runRetention --before` that Monday; every project's
 *    retention set so that the oldest week is past it), and when it dropped no partition the next
 *    hour's round: its time, its archives' leaves, the time to each archive's write and read-back,
 *    the partitions dropped, and every statement it sent (count, total and longest ms, by text).
 *
 * BENCH_STEPS (default `verify,archive,retention`) picks the steps.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { dropDatabase } from '../../scripts/lib/postgres';
import { createPool, type Db } from '../../src/db/pool';
import { verifyLog } from '../../src/integrity/verify-log';
import { runRetention } from '../../src/retention/run';
import { archiveKey, verifyStoredArchive, writeArchive } from '../../src/retention/archive';
import { TarReader } from '../../src/compliance/tar';
import type { ExportManifest } from '../../src/compliance/export-format';
import { planArchive } from '../../src/retention/plan';
import { historyDatabase } from '../lib/history-db';
import { BENCH_MASTER_KEY } from '../lib/stack';
import { measured } from '../lib/event-log';

const CALLS = Number(process.env.BENCH_CALLS ?? 1_000_000);
const DAYS = Number(process.env.BENCH_DAYS ?? 60);
const HISTORY_DB = process.env.BENCH_HISTORY_DB ?? '';
const VERIFY_ROUNDS = Number(process.env.BENCH_VERIFY_ROUNDS ?? 2);
const STEPS = new Set((process.env.BENCH_STEPS ?? 'verify,archive,retention').split(','));
const ARCHIVE_DAYS = Number(process.env.BENCH_ARCHIVE_DAYS ?? 8);
const ARCHIVE_ROUNDS = Number(process.env.BENCH_ARCHIVE_ROUNDS ?? 2);
/** Where the archive's row parts are written: `worker`, `thread`, or both (default), interleaved. */
const ARCHIVE_ROWS = (process.env.BENCH_ARCHIVE_ROWS ?? 'worker,thread').split(',') as ('worker' | 'thread')[];
const ADMIN_URL = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DAY_MS = 86_400_000;
const log = (m: string) => console.error(`[bench:log --retention] ${m}`);

/**
 * Every statement this process sends while on, by its text: count, total and longest milliseconds.
 * Installed before any pool connects (pool.ts binds each client's query when it connects).
 */
class StatementLog {
  private readonly byText = new Map<string, { n: number; ms: number; max: number }>();
  on = false;

  constructor() {
    const byText = this.byText;
    const isOn = () => this.on;
    const original = Client.prototype.query;
    Client.prototype.query = function (this: Client, ...args: unknown[]) {
      if (!isOn()) return (original as (...a: unknown[]) => unknown).apply(this, args);
      const first = args[0] as string | { text?: string };
      const text = (typeof first === 'string' ? first : (first?.text ?? '?')).replace(/\s+/g, ' ').trim().slice(0, 110);
      const t = performance.now();
      const done = () => {
        const ms = performance.now() - t;
        const s = byText.get(text) ?? { n: 0, ms: 0, max: 0 };
        s.n += 1;
        s.ms += ms;
        s.max = Math.max(s.max, ms);
        byText.set(text, s);
      };
      // pg's Pool calls it with a callback; a client's own callers take the promise.
      const last = args.length - 1;
      if (typeof args[last] === 'function') {
        const cb = args[last] as (...a: unknown[]) => unknown;
        args[last] = (...a: unknown[]) => {
          done();
          return cb(...a);
        };
        return (original as (...a: unknown[]) => unknown).apply(this, args);
      }
      const out = (original as (...a: unknown[]) => unknown).apply(this, args);
      if (out && typeof (out as Promise<unknown>).then === 'function') (out as Promise<unknown>).then(done, done);
      return out;
    } as typeof Client.prototype.query;
  }

  print(top = 15): void {
    const all = [...this.byText.entries()].sort((a, b) => b[1].ms - a[1].ms);
    const n = all.reduce((k, [, s]) => k + s.n, 0);
    console.log(`  ${n} statements of ${all.length} texts; the ${Math.min(top, all.length)} longest in total (count, total ms, longest ms, text):`);
    for (const [text, s] of all.slice(0, top)) console.log(`    ${String(s.n).padStart(7)} ${s.ms.toFixed(0).padStart(8)} ${s.max.toFixed(0).padStart(7)}  ${text}`);
    this.byText.clear();
  }
}

async function sizes(db: Db): Promise<Record<string, number>> {
  const { rows } = await db.query<{ name: string; bytes: string }>(
    `SELECT 'database' AS name, pg_database_size(current_database())::text AS bytes
     UNION ALL SELECT c.relname, pg_total_relation_size(c.oid)::text
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent IN ('calls'::regclass, 'permits'::regclass)
     UNION ALL SELECT t, pg_total_relation_size(t::regclass)::text FROM unnest(ARRAY['event_chain', 'merkle_nodes']) AS t`,
  );
  return Object.fromEntries(rows.map((r) => [r.name, Number(r.bytes)]));
}

/**
 * The records an archive's manifest counts (every file's `records`: events, proofs, permits, call
 * records, usage rows), read from the stored object's first member, manifest.note, whose first line
 * is the manifest.
 */
function manifestRecords(file: string): number {
  const head = Buffer.alloc(1 << 16);
  const fd = fs.openSync(file, 'r');
  let got: number;
  try {
    got = fs.readSync(fd, head, 0, head.length, 0);
  } finally {
    fs.closeSync(fd);
  }
  const note: Buffer[] = [];
  new TarReader((name) => (name === 'manifest.note' ? { write: (piece) => note.push(Buffer.from(piece)), end: () => undefined } : null)).write(head.subarray(0, got));
  const text = Buffer.concat(note).toString('utf8');
  if (!text.includes('\n')) throw new Error(`${file}: no manifest.note in its first ${got} bytes`);
  const manifest = JSON.parse(text.slice(0, text.indexOf('\n'))) as ExportManifest;
  return manifest.files.reduce((n, f) => n + f.records, 0);
}

/** Writes and verifies one archive of the project's rows before `cutoff`, ARCHIVE_ROUNDS times; the archive row is dropped after. */
async function archiveRounds(o: { db: Db; url: string; archiveDir: string; projectId: string; cutoff: Date }): Promise<void> {
  const deps = { db: o.db, config: { env: 'production' as const, masterKey: BENCH_MASTER_KEY, databaseUrl: o.url, retention: {}, archiveStore: { kind: 'directory' as const, dir: o.archiveDir } } };
  const a = await planArchive(deps, o.projectId, o.cutoff);
  if (!a) throw new Error(`nothing to archive before ${o.cutoff.toISOString()}`);
  const leaves = Number(a.last_index) - Number(a.first_index) + 1;
  try {
    for (let round = 1; round <= ARCHIVE_ROUNDS; round++) {
      // Each round writes the archive once per mode, the order alternating between rounds.
      const modes = round % 2 === 1 ? ARCHIVE_ROWS : [...ARCHIVE_ROWS].reverse();
      for (const mode of modes) {
        log(`archive of ${leaves} leaves, round ${round}, row parts in ${mode === 'worker' ? 'a worker thread' : "the archive's thread"}`);
        const w = await measured(() => writeArchive(deps, a, { now: new Date(), rowsInWorker: mode === 'worker' }));
        const { busy, idle } = w.machine;
        const v = await measured(() => verifyStoredArchive(deps, a, w.result.bytes));
        const rate = (ms: number) => (leaves / (ms / 1000)).toFixed(0);
        const records = manifestRecords(path.join(o.archiveDir, ...archiveKey(a).split('/')));
        console.log(
          `archive, round ${round}, rows in ${mode}: ${leaves} leaves (${records} records by its manifest), ${(w.result.bytes / 2 ** 20).toFixed(1)} MiB; ` +
            `written in ${(w.ms / 1000).toFixed(1)} s = ${rate(w.ms)} leaves/s (${(records / (w.ms / 1000)).toFixed(0)} records/s), ` +
            `this process ${(w.cpuUs / leaves).toFixed(1)} µs CPU per leaf, the machine ${((busy * 1000) / leaves).toFixed(1)} (${((100 * idle) / (busy + idle)).toFixed(0)} % of its cores idle); read back and verified in ${(v.ms / 1000).toFixed(1)} s = ${rate(v.ms)} leaves/s, ${(v.cpuUs / leaves).toFixed(1)} µs per leaf`,
        );
      }
    }
  } finally {
    await o.db.query('DELETE FROM archives WHERE id = $1', [a.id]);
  }
}

export async function run(): Promise<void> {
  const name = `tollgate_bench_retention_${process.pid}`;
  const archiveDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-retention-'));
  try {
    const { url, history: h } = await historyDatabase({ adminUrl: ADMIN_URL, name, historyDb: HISTORY_DB, calls: CALLS, days: DAYS, log });
    const statements = new StatementLog();
    const db = createPool(url, 4);
    const big = h.projects[0];
    console.log(`bench:log --retention — BENCH_CALLS=${CALLS} BENCH_DAYS=${DAYS}; ${h.projects.map((p) => `${p.name}: ${p.calls} calls, ${p.leaves} leaves`).join('; ')}`);
    try {
      for (let round = 1; STEPS.has('verify') && round <= VERIFY_ROUNDS; round++) {
        log(`integrity verify of the big project, round ${round}`);
        const m = await measured(() => verifyLog(db, big.id));
        const n = m.result.events_verified;
        if (!m.result.ok) throw new Error(`integrity verify failed: ${m.result.failures.join('; ')}`);
        console.log(
          `integrity verify, round ${round}: ${n} records in ${(m.ms / 1000).toFixed(1)} s = ${(n / (m.ms / 1000)).toFixed(0)} records/s; ` +
            `this process ${(m.cpuUs / n).toFixed(1)} µs CPU per record, PostgreSQL ${((m.postgresMs * 1000) / n).toFixed(1)} µs; the event loop's longest wait ${m.longestWaitMs.toFixed(0)} ms`,
        );
      }
      if (STEPS.has('archive')) await archiveRounds({ db, url, archiveDir, projectId: big.id, cutoff: new Date(h.start.getTime() + ARCHIVE_DAYS * DAY_MS) });
      if (STEPS.has('retention')) {
        const monday = new Date(h.start.getTime() + DAY_MS);
        const days = Math.floor((Date.now() - monday.getTime()) / DAY_MS);
        await db.query('UPDATE projects SET retention_days = $1', [days]);
        const before = await sizes(db);
        for (const cutoff of [monday, new Date(monday.getTime() + 3600_000)]) {
          const marks: string[] = [];
          const t0 = performance.now();
          statements.on = true;
          const m = await measured(() =>
            runRetention(
              { db, config: { env: 'production', masterKey: BENCH_MASTER_KEY, databaseUrl: url, retention: {}, archiveStore: { kind: 'directory', dir: archiveDir } } },
              { before: cutoff, now: new Date(), onStep: (step, id) => void (step === 'archived' || step === 'verified' ? marks.push(`${id} ${step} at ${((performance.now() - t0) / 1000).toFixed(1)} s`) : undefined) },
            ),
          );
          statements.on = false;
          const report = m.result;
          const leaves = report.projects.reduce((n, p) => n + (p.archive ? p.archive.log_range.last_index - p.archive.log_range.first_index + 1 : 0), 0);
          console.log(
            `retention --before ${cutoff.toISOString()}: ${(m.ms / 1000).toFixed(1)} s, ${leaves} leaves archived in ${report.projects.filter((p) => p.archive).length} archives; ` +
              `this process ${(m.cpuUs / 1e6).toFixed(1)} s CPU, PostgreSQL ${(m.postgresMs / 1000).toFixed(1)} s; dropped: ${report.partitions_dropped.join(', ') || 'nothing'}`,
          );
          console.log(`  phases (ms): ${JSON.stringify(report.phases_ms)}`);
          for (const p of report.projects)
            if (p.archive)
              console.log(
                `  ${p.project_id}: ${p.archive.log_range.last_index - p.archive.log_range.first_index + 1} leaves, ${((p.archive.bytes ?? 0) / 2 ** 20).toFixed(1)} MiB, deleted ${JSON.stringify(p.archive.deleted)}; ms ${JSON.stringify(p.phases_ms)}`,
              );
          for (const mark of marks) console.log(`  ${mark}`);
          statements.print();
          if (report.partitions_dropped.length > 0) break;
        }
        const after = await sizes(db);
        const mib = (b: number | undefined) => (b === undefined ? '—' : (b / 2 ** 20).toFixed(0));
        console.log(`  MiB before → after: ${Object.keys(before).map((k) => `${k} ${mib(before[k])} → ${mib(after[k])}`).join(', ')}`);
      }
    } finally {
      await db.end();
    }
  } finally {
    fs.rmSync(archiveDir, { recursive: true, force: true });
    await dropDatabase(ADMIN_URL, name);
  }
}
