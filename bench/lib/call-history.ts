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
import { v7 as uuidv7 } from 'uuid';
import type { Config } from '../../src/config';
import { createPool, type Db } from '../../src/db/pool';
import { ensureWeekPartitions, weekStart } from '../../src/db/partitions';
import { createProject } from '../../src/db/repositories/projects';
import { createApiKey } from '../../src/db/repositories/api-keys';
import { canonicalRecord, eventHash, GENESIS_HASH } from '../../src/events/canonical';
import { insertCheckpoint } from '../../src/db/repositories/integrity-log';
import { readRecordLeaves, type StoredRecordLeaf } from '../../src/db/repositories/record-leaves';
import { complianceSigner } from '../../src/integrity/keys';
import { logOrigin, rootOfRange } from '../../src/integrity/log';
import { appendLeaves, leafHash, LOWEST_STORED_LEVEL } from '../../src/integrity/merkle';
import { checkpointText, signNote } from '../../src/integrity/note';
import type { Lifecycle, PermitColumns, RecordColumns } from '../../src/executions/lifecycle';

const DAY_MS = 86_400_000;
/** Calls generated, hashed and inserted per batch. */
const BATCH = 5000;
/** The sequence hands out every 64th value (migration 0170). */
const SEQ_STEP = 64;

export interface HistoryProject {
  id: string;
  name: string;
  /** Calls of the project (denied ones included). */
  calls: number;
  /** Leaves chained (its records with a seq). */
  leaves: number;
  /** API key ids its records name. */
  keyIds: string[];
}

export interface CallHistory {
  projects: HistoryProject[];
  /** The first instant of the history (a Sunday 00:00 UTC) and the last call's. */
  start: Date;
  end: Date;
  /** Ids of a spread sample of the big project's records with a seq, oldest first. */
  sampleIds: string[];
  /** Load timings, seconds. */
  seconds: { rows: number; vacuum: number };
  rows: { permits: number; executions: number; chain: number; nodes: number };
}

const PROVIDERS: [string, string[]][] = [
  ['openai', ['gpt-4o-mini', 'gpt-4o']],
  ['anthropic', ['claude-haiku-4-5', 'claude-sonnet-4-5']],
  ['google', ['gemini-2.5-flash', 'gemini-2.5-pro']],
  ['deepseek', ['deepseek-chat']],
  ['mistral', ['mistral-small-latest', 'mistral-large-latest']],
];
const RARE_MODEL = 'gpt-4.1-rare';
const ROUTES = ['executions', 'executions', 'proxy', 'execute'] as const;
const WORDS = 'meadow ember basalt indigo nimbus tundra delta granite cedar fjord opal umber vale zephyr lumen'.split(' ');

/** A deterministic pseudo-random 32-bit value of (i, salt): the mix is the same on every run. */
function rnd(i: number, salt: number): number {
  let x = (i * 0x9e3779b1 + salt * 0x85ebca77) >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d) >>> 0;
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b) >>> 0;
  x ^= x >>> 16;
  return x >>> 0;
}

/** A UUIDv7-based id of `kind` made at `ms` (what `newId` makes at that instant). */
const idAt = (kind: string, ms: number) => `${kind}_${uuidv7({ msecs: ms }).replaceAll('-', '')}`;

/** The Sunday 00:00 UTC nearest to `at`. */
function nearestSunday(at: Date): Date {
  const monday = weekStart(at).getTime();
  const sundays = [monday - DAY_MS, monday + 6 * DAY_MS];
  return new Date(sundays.reduce((a, b) => (Math.abs(b - at.getTime()) < Math.abs(a - at.getTime()) ? b : a)));
}

interface Call {
  project: number;
  permit: Record<string, unknown>;
  record: Record<string, unknown> & { id: string; completed_at: Date };
  leaf: StoredRecordLeaf | null;
}

/** One call's permit and record rows (as inserted) and, for a call with a seq, its leaf as `readRecordLeaves` returns it. */
function makeCall(i: number, at: number, projects: HistoryProject[], projectOf: (i: number) => number): Call {
  const p = projectOf(i);
  const project = projects[p];
  const kind = i % 100;
  const status = kind < 97 ? 'completed' : kind < 99 ? 'failed' : 'denied';
  const [provider, models] = PROVIDERS[rnd(i, 1) % PROVIDERS.length];
  const model = i % 1000 === 7 ? RARE_MODEL : models[rnd(i, 2) % models.length];
  const route = ROUTES[i % ROUTES.length];
  const mode = rnd(i, 3) % 10 === 0 ? 'stream' : 'sync';
  const keyId = project.keyIds[i % project.keyIds.length];
  const intent = i % 100 === 42 ? `wfi_bench_${(i / 100) % 100 | 0}` : null;
  const latency = 150 + (rnd(i, 4) % 2800);
  const inputTokens = 20 + (rnd(i, 5) % 1500);
  const outputTokens = status === 'completed' ? 10 + (rnd(i, 6) % 400) : 0;
  const cost = status === 'completed' ? inputTokens * 2 + outputTokens * 8 : 0;
  const reserved = inputTokens * 2 + 1024 * 8;
  const execId = idAt('exec_req', at);
  const issued = at + 1;
  const permitId = idAt('permit', issued);
  const duration = status === 'denied' ? 2 : latency + 6;
  const completed = new Date(at + duration);
  const requested = rnd(i, 7) % 2 === 0;
  const routing = { reason_code: requested ? 'explicit_request' : 'default_model_for_provider', requested_model: requested ? model : null, fallback_occurred: false, requested_provider: provider };
  const allow = status !== 'denied';
  const governance = allow ? { reason: 'policy.active_policy_candidate', decision: 'allow' } : { reason: 'policy.model_not_allowed', decision: 'deny' };
  const text = `Emulated reply ${(rnd(i, 8) >>> 0).toString(16)}: ${Array.from({ length: 12 + (rnd(i, 9) % 20) }, (_, k) => WORDS[rnd(i, 10 + k) % WORDS.length]).join(' ')}.`;
  const envelope: Record<string, unknown> =
    status === 'completed'
      ? { usage: {}, output: { content: [{ role: 'assistant', text, type: 'text' }] }, routing, governance }
      : status === 'failed'
        ? { usage: { metrics: [] }, routing, governance, error_message: 'upstream returned 502' }
        : { governance };
  const lifecycle: Lifecycle | null =
    status === 'completed'
      ? { end: 'ok', attempts: [[provider, model, 3, 3 + latency, 200]], dispatched_ms: 2, finish_reason: 'stop' }
      : status === 'failed'
        ? { end: 'failed', attempts: [[provider, model, 3, 3 + latency, 502, 'http_error']], failure_kind: 'http_error', failure_status: 502, dispatched_ms: 2 }
        : null;
  if (lifecycle && route === 'proxy') lifecycle.routing = { route: 'proxy:openai', path: '/v1/chat/completions' };
  const permitRoute = route === 'proxy' ? 'proxy:openai' : route;
  const decision = allow
    ? { decision: 'allow', reason_code: 'policy.active_policy_candidate', display_reason: 'Allowed by the active project policy' }
    : { decision: 'deny', reason_code: 'policy.model_not_allowed', display_reason: 'The model is not allowed by the project policy' };
  const permit = {
    id: permitId,
    project_id: project.id,
    request_id: execId,
    route: permitRoute,
    operation: 'generate.text',
    provider,
    model,
    workflow_id: intent,
    ...decision,
    decision_details: {
      code: decision.reason_code,
      reason: decision.display_reason,
      decision: decision.decision,
      reason_detail: { kind: 'active_policy', outcome: allow ? 'allowed' : 'denied', category: 'policy' },
      policy_version: 0,
      projected_cost_usd_micros: reserved,
    },
    actions: allow ? [{ type: 'proceed', message: 'The request may proceed' }] : [{ type: 'stop', message: 'The request must not proceed' }],
    estimated_input_tokens: inputTokens,
    estimated_output_tokens: 1024,
    estimated_cost_micros: reserved,
    reservation_state: status === 'completed' ? 'settled' : status === 'failed' ? 'released' : 'none',
    reserved_cost_micros: allow ? reserved : 0,
    actual_cost_micros: allow ? cost : null,
    actual_input_tokens: allow ? inputTokens : null,
    actual_output_tokens: allow ? outputTokens : null,
    settled_at: status === 'completed' ? completed.toISOString() : null,
    released_at: status === 'failed' ? completed.toISOString() : null,
    release_reason: status === 'failed' ? 'call_failed' : null,
    issued_at: new Date(issued).toISOString(),
    expires_at: allow ? new Date(issued + 600_000).toISOString() : null,
    metadata: { mode, key_id: keyId, execution_id: execId, request_metadata: {}, decision_metadata: { evaluated_at: new Date(issued).toISOString(), policy_version: 0 } },
  };
  const record = {
    id: execId,
    project_id: project.id,
    seq: null as string | null,
    route,
    operation: 'generate.text',
    mode,
    status,
    status_code: status === 'completed' ? 200 : status === 'failed' ? 502 : 403,
    permit_id: permitId,
    provider,
    model,
    workflow_intent_id: intent,
    idempotency_key: null,
    key_id: keyId,
    job_id: null,
    input_tokens: inputTokens,
    output_tokens: outputTokens,
    cost_usd_micros: cost,
    estimated_final: false,
    error_code: status === 'failed' ? 'upstream_error' : status === 'denied' ? 'policy_denied' : null,
    created_at: new Date(at),
    completed_at: completed,
    duration_ms: duration,
    envelope,
    lifecycle,
  };
  const leafPermit: PermitColumns = {
    id: permit.id,
    project_id: permit.project_id,
    request_id: permit.request_id,
    route: permit.route,
    operation: permit.operation,
    provider,
    model,
    workflow_id: intent,
    decision: permit.decision,
    reason_code: permit.reason_code,
    display_reason: permit.display_reason,
    reserved_cost_micros: String(permit.reserved_cost_micros),
    issued_at: new Date(issued),
    expires_at: permit.expires_at === null ? null : new Date(permit.expires_at),
    // readRecordLeaves reads only the firewall decision of the metadata.
    metadata: { decision_metadata: { firewall: null } },
  };
  const leaf = lifecycle ? { project_id: project.id, seq: '', row: record as unknown as RecordColumns & Record<string, unknown>, permit: leafPermit } : null;
  return { project: p, permit, record, leaf };
}

/** A project's log as the loader extends it: chain head and the tree's compact range. */
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
  'id, project_id, seq, route, operation, mode, status, status_code, permit_id, provider, model, workflow_intent_id, idempotency_key, key_id, job_id, ' +
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
    const totals = { permits: 0, executions: 0, chain: 0, nodes: 0 };

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
      totals.executions += n;
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
    await db.query('VACUUM (ANALYZE) permits, executions, event_chain, merkle_nodes');
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
      await db.query(`INSERT INTO executions (${RECORD_COLUMNS}) SELECT ${RECORD_COLUMNS} FROM json_populate_recordset(NULL::executions, $1::json)`, [records]);
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
    `SELECT c.seq::text AS seq, c.prev_hash, c.hash, c.leaf_hash FROM executions x JOIN event_chain c ON c.seq = x.seq
      WHERE x.project_id = $1 AND x.id = ANY($2::text[])`,
    [projectId, ids],
  );
  const leaves = new Map((await readRecordLeaves(db, rows.map(() => projectId), rows.map((r) => r.seq))).map((l) => [l.seq, l]));
  for (const r of rows) {
    const leaf = leaves.get(r.seq);
    const canonical = leaf && canonicalRecord(leaf, r.prev_hash);
    if (!canonical || eventHash(r.prev_hash, canonical) !== r.hash || !leafHash(canonical).equals(r.leaf_hash)) {
      throw new Error(`loaded record seq ${r.seq} does not match its chain row as read back: the loader's rows and leaves differ`);
    }
  }
  if (rows.length !== ids.length) throw new Error(`sample: ${rows.length} of ${ids.length} records found with their chain rows`);
}
