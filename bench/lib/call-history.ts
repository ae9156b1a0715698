/**
 * A grown database for the growth bench (bench/growth.ts): `calls` governed calls over `days` days
 * across a few projects (one big), each a permit and a call record with its lifecycle, every record
 * chained as its project's log leaf, the tree's stored nodes and one signed checkpoint per project,
 * as the pipeline, the sequencer and the checkpoint would have left them.
 *
 * Rows are made here rather than in SQL so that every hash comes from the product's own functions
 * on the very values inserted: the record's canonical leaf (`canonicalRecord` of the record and
 * permit shaped as `readRecordLeaves` returns them), the chain hash (`eventHash`), the leaf hash and
 * the tree (`leafHash`, `appendLeaves`, nodes of `LOWEST_STORED_LEVEL` and up), the checkpoint note
 * (`checkpointText`, `signNote`). A sample is read back and re-hashed after the load; the bench's
 * `integrity verify` then checks every record.
 *
 * Ids are UUIDv7s of each row's instant (the record's `created_at`, the permit's `issued_at`), so
 * rows land in their week partitions; past weeks' partitions are created first
 * (`ensureWeekPartitions` pointed at the first week). The history starts on a Sunday 00:00 UTC, so
 * its oldest week partition holds one day: the one retention ages out first. Records take seqs as
 * the sequence hands them out (every 64th value) in order of completion within each batch of calls,
 * as the finish statement assigns them.
 *
 * The mix follows bench/log/request-log.ts: 97 % completed, 2 % failed, 1 % denied (a denied call's record
 * has no seq and no lifecycle: it is no leaf); four routes; five providers and nine models, one of
 * them rare (0.1 %); the project's API keys in turn; 1 % of calls joined to one of 100 intents; 10 %
 * streamed. 70 % of the calls are the big project's, the rest spread over four others.
 */
import type { Config } from '../../src/config';
import { createPool, type Db } from '../../src/db/pool';
import { ensureWeekPartitions, weekStart } from '../../src/db/partitions';
import { createProject } from '../../src/db/repositories/projects';
import { createApiKey } from '../../src/db/repositories/api-keys';
import { canonicalRecord, eventHash, GENESIS_HASH } from '../../src/events/canonical';
import { insertCheckpoint } from '../../src/db/repositories/integrity-log';
import { readRecordLeafSources, recordLeafCanonical, recordLeafSourceKey } from '../../src/db/repositories/record-leaf-text';
import { complianceSigner } from '../../src/integrity/keys';
import { logOrigin, rootOfRange } from '../../src/integrity/log';
import { appendLeaves, LOWEST_STORED_LEVEL } from '../../src/integrity/merkle';
import { leafHash } from '../../src/integrity/hashes';
import { checkpointText, signNote } from '../../src/integrity/note';
import { makeCall, rnd, type Call, type HistoryProject } from './call-history-calls';

export type { HistoryProject };

const DAY_MS = 86_400_000;
/** Calls generated, hashed and inserted per batch. */
const BATCH = 5000;
/** The sequence hands out every 64th value (migration 0170). */
const SEQ_STEP = 64;

export interface CallHistory {
  projects: HistoryProject[];
  /** The first instant of the history (a Sunday 00:00 UTC) and the last call's. */
  start: Date;
  end: Date;
  /** Ids of a spread sample of the big project's records with a seq, oldest first. */
  sampleIds: string[];
  /** Load timings, seconds. */
  seconds: { rows: number; vacuum: number };
  rows: { permits: number; calls: number; chain: number; nodes: number };
}

/** The Sunday 00:00 UTC nearest to `at`. */
function nearestSunday(at: Date): Date {
  const monday = weekStart(at).getTime();
  const sundays = [monday - DAY_MS, monday + 6 * DAY_MS];
  return new Date(sundays.reduce((a, b) => (Math.abs(b - at.getTime()) < Math.abs(a - at.getTime()) ? b : a)));
}

interface LogState {
  pos: number;
  prev: string;
  range: Buffer[];
}

const arrayText = (xs: ReadonlyArray<string | number>) => `{${xs.join(',')}}`;

const PERMIT_COLUMNS =
  'id, project_id, request_id, route, operation, provider, model, workflow_id, decision, reason_code, display_reason, decision_details, actions, ' +
  'estimated_input_tokens, estimated_output_tokens, estimated_cost_micros, reservation_state, reserved_cost_micros, actual_cost_micros, ' +
  'actual_input_tokens, actual_output_tokens, settled_at, released_at, release_reason, issued_at, expires_at, metadata';
const RECORD_COLUMNS =
  'id, project_id, seq, route, operation, mode, status, status_code, permit_id, provider, model, intent_id, idempotency_key, key_id, job_id, ' +
  'input_tokens, output_tokens, cost_usd_micros, estimated_final, error_code, created_at, completed_at, duration_ms, envelope, lifecycle, recorded_at';

export async function loadCallHistory(
  databaseUrl: string,
  config: Pick<Config, 'env' | 'masterKey' | 'databaseUrl'>,
  opts: { calls: number; days: number; now: Date; log: (m: string) => void },
): Promise<CallHistory> {
  const { log } = opts;
  const db: Db = createPool(databaseUrl, 3);
  try {
    const bigShare = 0.7;
    const projects: HistoryProject[] = [];
    for (let k = 0; k < 5; k++) {
      const name = k === 0 ? 'growth big' : `growth small ${k}`;
      const project = await createProject(db, { name, plan: 'enterprise' });
      const keyIds: string[] = [];
      for (let j = 0; j < (k === 0 ? 20 : 2); j++) keyIds.push((await createApiKey(db, { projectId: project.id, scope: 'client', name: `bench ${j}` })).record.id);
      projects.push({ id: project.id, name, calls: 0, leaves: 0, keyIds });
    }
    // 70 % the big project's, the rest in turn; by index, so it is the same mix on every run.
    const projectOf = (i: number) => (rnd(i, 99) % 1000 < bigShare * 1000 ? 0 : 1 + (i % 4));

    const start = nearestSunday(new Date(opts.now.getTime() - opts.days * DAY_MS));
    const end = opts.now.getTime() - 5 * 60_000;
    const span = end - start.getTime();
    const weeks = Math.ceil((opts.now.getTime() - weekStart(start).getTime()) / (7 * DAY_MS));
    const parts = await ensureWeekPartitions(db, start, weeks + 1);
    log(`history ${start.toISOString()} → ${new Date(end).toISOString()} (${(span / DAY_MS).toFixed(1)} days); ${parts.created.length} week partitions created`);

    const signer = await complianceSigner(db, config);
    const { rows: seqRows } = await db.query<{ v: string }>("SELECT nextval('events_seq_seq')::text AS v");
    let seq = Number(seqRows[0].v);
    const logs: LogState[] = projects.map(() => ({ pos: 0, prev: GENESIS_HASH, range: [] }));
    const sampleEvery = Math.max(1, Math.floor(opts.calls / 400));
    const sampleIds: string[] = [];
    const totals = { permits: 0, calls: 0, chain: 0, nodes: 0 };

    await db.query('SET synchronous_commit = off').catch(() => undefined);
    const t0 = performance.now();
    let inFlight: Promise<void> = Promise.resolve();
    let lastLog = t0;
    for (let from = 0; from < opts.calls; from += BATCH) {
      const n = Math.min(BATCH, opts.calls - from);
      const calls: Call[] = [];
      for (let i = from; i < from + n; i++) calls.push(makeCall(i, Math.floor(start.getTime() + ((i + 0.5) * span) / opts.calls), projects, projectOf));
      // Seqs in order of completion, as the finish statement hands them out.
      const leaves = calls.filter((c) => c.leaf !== null).sort((a, b) => a.record.completed_at.getTime() - b.record.completed_at.getTime());
      const chain = { seqs: [] as number[], projects: [] as string[], pos: [] as number[], prev: [] as string[], hash: [] as string[], leaf: [] as string[] };
      const newLeaves: Buffer[][] = projects.map(() => []);
      for (const c of leaves) {
        seq += SEQ_STEP;
        c.record.seq = String(seq);
        c.leaf!.seq = String(seq);
        const state = logs[c.project];
        const canonical = canonicalRecord(c.leaf!, state.prev);
        const hash = eventHash(state.prev, canonical);
        const lh = leafHash(canonical);
        state.pos += 1;
        chain.seqs.push(seq);
        chain.projects.push(projects[c.project].id);
        chain.pos.push(state.pos);
        chain.prev.push(state.prev);
        chain.hash.push(hash);
        chain.leaf.push(lh.toString('hex'));
        newLeaves[c.project].push(lh);
        state.prev = hash;
        if (c.project === 0 && (state.pos - 1) % sampleEvery === 0) sampleIds.push(c.record.id);
      }
      const nodes: { project: string; level: number; idx: number; hash: Buffer }[] = [];
      projects.forEach((p, k) => {
        const state = logs[k];
        const size = state.pos - newLeaves[k].length;
        const out = appendLeaves(size, state.range, newLeaves[k]);
        state.range = out.range;
        for (const node of out.nodes) if (node.level >= LOWEST_STORED_LEVEL) nodes.push({ project: p.id, ...node });
        p.leaves = state.pos;
      });
      for (const c of calls) projects[c.project].calls += 1;
      const permits = JSON.stringify(calls.map((c) => c.permit));
      const records = JSON.stringify(calls.map((c) => ({ ...c.record, recorded_at: c.record.completed_at })));
      await inFlight;
      inFlight = insertBatch(db, permits, records, chain, nodes);
      totals.permits += n;
      totals.calls += n;
      totals.chain += chain.seqs.length;
      totals.nodes += nodes.length;
      if (performance.now() - lastLog > 30_000) {
        lastLog = performance.now();
        const s = (lastLog - t0) / 1000;
        log(`${from + n} of ${opts.calls} calls in ${s.toFixed(0)} s (${((from + n) / s).toFixed(0)} calls/s)`);
      }
    }
    await inFlight;
    await db.query("SELECT setval('events_seq_seq', $1::bigint)", [seq]);
    for (const [k, p] of projects.entries()) {
      if (p.leaves === 0) continue;
      const root = rootOfRange(logs[k].range);
      const origin = logOrigin(p.id);
      const note = signNote(checkpointText({ origin, size: p.leaves, root, extensions: [] }), signer.keyName, signer.privateKey, signer.publicKey32);
      await insertCheckpoint(db, { project_id: p.id, tree_size: p.leaves, root_hash: root, origin, kid: signer.kid, note });
    }
    const rowsSeconds = (performance.now() - t0) / 1000;
    log(`${opts.calls} calls written in ${rowsSeconds.toFixed(0)} s (${(opts.calls / rowsSeconds).toFixed(0)} calls/s); checking a sample`);
    await checkSample(db, projects[0].id, sampleIds);
    const t1 = performance.now();
    await db.query('VACUUM (ANALYZE) permits, calls, event_chain, merkle_nodes');
    const vacuum = (performance.now() - t1) / 1000;
    log(`VACUUM ANALYZE in ${vacuum.toFixed(0)} s`);
    return { projects, start, end: new Date(end), sampleIds, seconds: { rows: rowsSeconds, vacuum }, rows: totals };
  } finally {
    await db.end();
  }
}

/** One batch's rows: permits and records on one connection, chain rows and nodes on another. */
async function insertBatch(
  db: Db,
  permits: string,
  records: string,
  chain: { seqs: number[]; projects: string[]; pos: number[]; prev: string[]; hash: string[]; leaf: string[] },
  nodes: { project: string; level: number; idx: number; hash: Buffer }[],
): Promise<void> {
  await Promise.all([
    (async () => {
      await db.query(`INSERT INTO permits (${PERMIT_COLUMNS}) SELECT ${PERMIT_COLUMNS} FROM json_populate_recordset(NULL::permits, $1::json)`, [permits]);
      await db.query(`INSERT INTO calls (${RECORD_COLUMNS}) SELECT ${RECORD_COLUMNS} FROM json_populate_recordset(NULL::calls, $1::json)`, [records]);
    })(),
    (async () => {
      if (chain.seqs.length > 0) {
        await db.query(
          `INSERT INTO event_chain (seq, project_id, chain_pos, prev_hash, hash, leaf_hash)
           SELECT v.seq, v.project_id, v.pos, v.prev, v.hash, decode(v.leaf, 'hex')
             FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[]) AS v(seq, project_id, pos, prev, hash, leaf)`,
          [arrayText(chain.seqs), chain.projects, arrayText(chain.pos), arrayText(chain.prev), arrayText(chain.hash), arrayText(chain.leaf)],
        );
      }
      if (nodes.length > 0) {
        await db.query(
          `INSERT INTO merkle_nodes (project_id, level, idx, hash)
           SELECT w.project_id, w.level, w.idx, decode(w.hash, 'hex')
             FROM unnest($1::text[], $2::smallint[], $3::bigint[], $4::text[]) AS w(project_id, level, idx, hash)`,
          [nodes.map((x) => x.project), arrayText(nodes.map((x) => x.level)), arrayText(nodes.map((x) => x.idx)), arrayText(nodes.map((x) => x.hash.toString('hex')))],
        );
      }
    })(),
  ]);
}

/** Re-reads sampled records as the sequencer and `integrity verify` do and checks each against its chain row. */
async function checkSample(db: Db, projectId: string, ids: string[]): Promise<void> {
  const { rows } = await db.query<{ seq: string; prev_hash: string; hash: string; leaf_hash: Buffer }>(
    `SELECT c.seq::text AS seq, c.prev_hash, c.hash, c.leaf_hash FROM calls x JOIN event_chain c ON c.seq = x.seq
      WHERE x.project_id = $1 AND x.id = ANY($2::text[])`,
    [projectId, ids],
  );
  const leaves = new Map((await readRecordLeafSources(db, rows.map(() => projectId), rows.map((r) => r.seq))).map((l) => [recordLeafSourceKey(l).seq, l]));
  for (const r of rows) {
    const leaf = leaves.get(r.seq);
    const canonical = leaf && recordLeafCanonical(leaf, r.prev_hash);
    if (!canonical || eventHash(r.prev_hash, canonical) !== r.hash || !leafHash(canonical).equals(r.leaf_hash)) {
      throw new Error(`loaded record seq ${r.seq} does not match its chain row as read back: the loader's rows and leaves differ`);
    }
  }
  if (rows.length !== ids.length) throw new Error(`sample: ${rows.length} of ${ids.length} records found with their chain rows`);
}
