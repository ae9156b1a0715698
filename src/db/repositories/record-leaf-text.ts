/**
 * Call records' leaves written straight from plain columns, wherever a leaf is written: the
 * sequencer as it chains a record, the log's checks and inclusion proofs, `integrity verify`, an
 * export's or archive's events file. The same bytes as `canonicalRecord` of the record read whole
 * (`readRecordLeaves`), without the row objects, Dates and intermediate record event those build
 * per record (most of verify's CPU per record), and without JSON.parse: the jsonb columns are
 * canonicalised from their text, so the leaf chained and the leaf verified are written from the
 * same text (docs/decisions/event-hash-chain.md: V8's JSON.parse can misread escaped names).
 *
 * The statement selects RECORD_LEAF_SQL's columns as the leaf writes them: timestamps as whole
 * milliseconds since the epoch (floored, as a Date parsed from the row truncates them; NULL outside
 * years 1–9999, where the record is read and written the generic way), jsonb as its text. The
 * writer below is `recordLeafParts` (src/executions/record-leaf.ts) and `canonicalJson` unrolled
 * for these columns: the record's members in RFC 8785 order, `session_id` only where it is set.
 * test/integration/db/record-leaf-text.test.ts checks it against `canonicalRecord` on stored rows.
 */
import { Query, type PoolClient } from 'pg';
import type { Queryable } from '../pool';
import { NdjsonChunk } from '../../events/ndjson-chunk';
import { decodeUtf8 } from '../../utf8';
import { canonicalRecord } from '../../events/canonical';
import { chainAndLeafHash, chainAndLeafHashOfBytes } from '../../integrity/hashes';
import { RECORD_LEAF_EVENT_TYPE } from '../../executions/record-leaf';
import { readRecordLeaves, RECORD_PERMIT_SQL, selectRecordsAtKeys, seqSpan, type StoredRecordLeaf } from './record-leaves';
import type { CallRecord } from './call-records';

const ms = (column: string) =>
  `CASE WHEN ${column} >= '0001-01-01 00:00:00+00' AND ${column} < '10000-01-01 00:00:00+00' THEN floor(extract(epoch FROM ${column}) * 1000)::bigint END`;

const RECORD_LEAF_TEXT_SQL = `
  x.seq, x.id, x.project_id, x.provider, x.model, x.permit_id, x.job_id, ${ms('x.completed_at')} AS completed_ms,
  x.route, x.operation, x.mode, x.status, x.status_code, x.intent_id, x.idempotency_key, x.key_id, x.session_id,
  x.input_tokens, x.output_tokens, x.cost_usd_micros, x.estimated_final, x.error_code, ${ms('x.created_at')} AS created_ms,
  x.duration_ms, x.envelope::text AS envelope, x.lifecycle::text AS lifecycle,
  p.id AS p_id, p.decision AS p_decision, p.display_reason AS p_display_reason,
  p.expires_at IS NOT NULL AS p_expires, ${ms('p.expires_at')} AS p_expires_ms,
  (p.metadata->'decision_metadata'->'firewall')::text AS p_firewall, ${ms('p.issued_at')} AS p_issued_ms,
  p.model AS p_model, p.operation AS p_operation, p.provider AS p_provider, p.reason_code AS p_reason_code,
  p.reserved_cost_micros AS p_reserved_cost_micros, p.route AS p_route, p.workflow_id AS p_workflow_id`;

type RecordPlainColumn =
  | 'id' | 'project_id' | 'provider' | 'model' | 'permit_id' | 'job_id' | 'route' | 'operation' | 'mode' | 'status' | 'status_code'
  | 'intent_id' | 'idempotency_key' | 'key_id' | 'session_id' | 'input_tokens' | 'output_tokens' | 'cost_usd_micros'
  | 'estimated_final' | 'error_code' | 'duration_ms';

/** The statement's row: the record's plain columns as the call record types them, then its timestamps, jsonb and permit as the leaf writes them. */
type RecordLeafTextRow = Pick<CallRecord, RecordPlainColumn> & {
  seq: number;
  completed_ms: number | null;
  created_ms: number | null;
  envelope: string;
  lifecycle: string | null;
  p_id: string | null;
  p_decision: string;
  p_display_reason: string;
  p_expires: boolean;
  p_expires_ms: number | null;
  p_firewall: string | null;
  p_issued_ms: number | null;
  p_model: string | null;
  p_operation: string | null;
  p_provider: string | null;
  p_reason_code: string;
  p_reserved_cost_micros: number;
  p_route: string;
  p_workflow_id: string | null;
};

const j = JSON.stringify;

const DAY_MS = 86_400_000;
const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const pad3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);
/** The last day written and its `"YYYY-MM-DDT` (a record's timestamps, and the next record's, mostly share it). */
let isoDay = NaN;
let isoDayText = '';

/**
 * `JSON.stringify(new Date(ms).toISOString())` for the years 1–9999 the columns carry (else
 * NULL), quoted: the day's text from a Date once per day, the time of day by arithmetic.
 * Number(): the bigint columns come as text where the pool module (src/db/pool.ts) did not set their parser.
 */
function iso(msSinceEpoch: number | string): string {
  const ms = Number(msSinceEpoch);
  const day = Math.floor(ms / DAY_MS);
  if (day !== isoDay) {
    isoDayText = `"${new Date(day * DAY_MS).toISOString().slice(0, 11)}`;
    isoDay = day;
  }
  let t = ms - day * DAY_MS;
  const h = Math.floor(t / 3_600_000);
  t -= h * 3_600_000;
  const m = Math.floor(t / 60_000);
  t -= m * 60_000;
  const sec = Math.floor(t / 1000);
  return `${isoDayText}${pad2(h)}:${pad2(m)}:${pad2(sec)}.${pad3(t - sec * 1000)}Z"`;
}
const EVENT_TYPE = j(RECORD_LEAF_EVENT_TYPE);

/** Whether the row's timestamps fit the columns (else the record is read whole). */
const writable = (r: RecordLeafTextRow) =>
  r.completed_ms !== null && r.created_ms !== null && (r.p_id === null || (r.p_issued_ms !== null && (!r.p_expires || r.p_expires_ms !== null)));

/** The permit's members; jsonb's text as the leaf holds it: as `canonicalJson` writes the value pg would have parsed it into. */
function writePermit(c: NdjsonChunk, r: RecordLeafTextRow): void {
  if (r.p_id === null) return c.ascii('null');
  c.ascii('{"decision":');
  c.json(r.p_decision);
  c.ascii(',"display_reason":');
  c.json(r.p_display_reason);
  c.ascii(',"expires_at":');
  c.ascii(r.p_expires ? iso(r.p_expires_ms!) : 'null');
  c.ascii(',"firewall":');
  c.jsonb(r.p_firewall);
  c.ascii(',"issued_at":');
  c.ascii(iso(r.p_issued_ms!));
  c.ascii(',"model":');
  c.json(r.p_model);
  c.ascii(',"operation":');
  c.json(r.p_operation);
  c.ascii(',"provider":');
  c.json(r.p_provider);
  c.ascii(',"reason_code":');
  c.json(r.p_reason_code);
  c.ascii(',"reserved_cost_micros":');
  c.json(Number(r.p_reserved_cost_micros));
  c.ascii(',"route":');
  c.json(r.p_route);
  c.ascii(',"workflow_id":');
  c.json(r.p_workflow_id);
  c.ascii('}');
}

/** The record's members; the `intent_id` column is the member `workflow_intent_id` (its name when leaves were first chained: LEAF_MEMBER_OF_COLUMN). */
function writeRecord(c: NdjsonChunk, r: RecordLeafTextRow): void {
  c.ascii('{"cost_usd_micros":');
  c.json(Number(r.cost_usd_micros));
  c.ascii(',"created_at":');
  c.ascii(iso(r.created_ms!));
  c.ascii(',"duration_ms":');
  c.json(r.duration_ms);
  c.ascii(',"envelope":');
  c.jsonb(r.envelope);
  c.ascii(',"error_code":');
  c.json(r.error_code);
  c.ascii(',"estimated_final":');
  c.json(r.estimated_final);
  c.ascii(',"idempotency_key":');
  c.json(r.idempotency_key);
  c.ascii(',"input_tokens":');
  c.json(r.input_tokens);
  c.ascii(',"key_id":');
  c.json(r.key_id);
  c.ascii(',"lifecycle":');
  c.jsonb(r.lifecycle);
  c.ascii(',"mode":');
  c.json(r.mode);
  c.ascii(',"operation":');
  c.json(r.operation);
  c.ascii(',"output_tokens":');
  c.json(r.output_tokens);
  c.ascii(',"route":');
  c.json(r.route);
  if (r.session_id !== null) {
    c.ascii(',"session_id":');
    c.json(r.session_id);
  }
  c.ascii(',"status":');
  c.json(r.status);
  c.ascii(',"status_code":');
  c.json(r.status_code);
  c.ascii(',"workflow_intent_id":');
  c.json(r.intent_id);
  c.ascii('}');
}

/** The record's leaf linked to `prevHash`: `canonicalRecord(leaf, prevHash)` of the same record. */
function writeLeaf(c: NdjsonChunk, r: RecordLeafTextRow, prevHash: string | null): void {
  c.ascii(`{"event_type":${EVENT_TYPE},"id":`);
  c.json(r.id);
  c.ascii(',"job_id":');
  c.json(r.job_id);
  c.ascii(',"metadata":{"permit":');
  writePermit(c, r);
  c.ascii(',"record":');
  writeRecord(c, r);
  c.ascii('},"model":');
  c.json(r.model);
  c.ascii(',"permit_id":');
  c.json(r.permit_id);
  c.ascii(',"phase":"record","prev_hash":');
  c.json(prevHash);
  c.ascii(',"project_id":');
  c.json(r.project_id);
  c.ascii(',"provider":');
  c.json(r.provider);
  c.ascii(',"request_id":');
  c.json(r.id);
  c.ascii(`,"seq":${Number(r.seq)},"session_id":null,"source":"calls","timestamp":`);
  c.ascii(iso(r.completed_ms!));
  c.ascii('}');
}

/** A record as read for its leaf: its plain columns, or (timestamps the columns cannot carry) its whole stored leaf. */
export type RecordLeafSource = RecordLeafTextRow | StoredRecordLeaf;

/**
 * The record's canonical leaf linked to `prevHash` written into `chunk` (an export's or archive's
 * events file): the same bytes as `recordLeafCanonical`, without a string of them.
 */
export function writeRecordLeaf(chunk: NdjsonChunk, source: RecordLeafSource, prevHash: string | null): void {
  if ('row' in source) chunk.text(canonicalRecord(source, prevHash));
  else writeLeaf(chunk, source, prevHash);
}

/** One leaf's chunk, kept between calls; a large one is let go. */
let leafChunk = new NdjsonChunk(4096);
const LEAF_CHUNK_KEPT = 1 << 20;

/** `use` of the leaf chunk emptied: what it makes of the bytes it writes there (they are overwritten by the next call). */
function inLeafChunk<T>(use: (c: NdjsonChunk) => T): T {
  const c = leafChunk;
  c.n = 0;
  const out = use(c);
  if (c.buf.length > LEAF_CHUNK_KEPT) leafChunk = new NdjsonChunk(4096);
  return out;
}

/**
 * The record's canonical leaf linked to `prevHash`, written when it is hashed or written out: the
 * text is built from the row then and dropped after, never held for a whole batch of records.
 */
export function recordLeafCanonical(source: RecordLeafSource, prevHash: string | null): string {
  if ('row' in source) return canonicalRecord(source, prevHash);
  return inLeafChunk((c) => {
    writeLeaf(c, source, prevHash);
    return decodeUtf8(c.bytes());
  });
}

/**
 * `chainAndLeafHash(prevHash, recordLeafCanonical(source, prevHash))`, what `integrity verify`
 * checks a record's row against: hashed from the leaf's bytes as they are written, with no string
 * of them decoded and encoded again.
 */
export function recordLeafHashes(source: RecordLeafSource, prevHash: string): { chain: string; leaf: Buffer } {
  if ('row' in source) return chainAndLeafHash(prevHash, canonicalRecord(source, prevHash));
  return inLeafChunk((c) => {
    // A pad byte, then the link: chainAndLeafHashOfBytes's layout.
    c.ascii(' ');
    c.text(prevHash);
    const leafAt = c.n;
    writeLeaf(c, source, prevHash);
    return chainAndLeafHashOfBytes(c.buf.subarray(0, c.n), leafAt);
  });
}

/** The statement both readers below send: a project's records in a span of seqs, with their permits. */
const sourcesQuery = (projectId: string, span: { lo: number; hi: number }, limit: number) => ({
  // Named: a connection plans it once (its week partitions twice over) rather than per batch.
  name: 'record-leaf-text-sources',
  text: `SELECT ${RECORD_LEAF_TEXT_SQL}
       FROM calls x ${RECORD_PERMIT_SQL}
      WHERE x.project_id = $1 AND x.seq >= $2 AND x.seq <= $3
      LIMIT $4`,
  values: [projectId, span.lo, span.hi, limit],
});

/**
 * The records at (project, seq) keys as `recordLeafCanonical`'s sources, in one statement (through
 * the calls_project_seq_idx index): what the sequencer and the log's checks hash, so a leaf is
 * written from the same jsonb text when it is chained and when it is verified. Keys no record
 * holds are absent; a record whose timestamps the columns cannot carry is read whole.
 */
export async function readRecordLeafSources(db: Queryable, projectIds: readonly string[], seqs: ReadonlyArray<string | number>): Promise<RecordLeafSource[]> {
  return wholeWhereNeeded(db, await selectRecordsAtKeys<RecordLeafTextRow>(db, RECORD_LEAF_TEXT_SQL, projectIds, seqs));
}

/** The record of an execution id with a seq as `recordLeafCanonical`'s source; null for a record outside the chain. */
export async function readRecordLeafSourceById(db: Queryable, projectId: string, executionId: string): Promise<RecordLeafSource | null> {
  const { rows } = await db.query<RecordLeafTextRow>(
    `SELECT ${RECORD_LEAF_TEXT_SQL}
       FROM calls x ${RECORD_PERMIT_SQL}
      WHERE x.project_id = $1 AND x.id = $2 AND x.seq IS NOT NULL`,
    [projectId, executionId],
  );
  return (await wholeWhereNeeded(db, rows))[0] ?? null;
}

/** The rows as sources, those whose timestamps the columns cannot carry read whole in their place. */
async function wholeWhereNeeded(db: Queryable, rows: RecordLeafTextRow[]): Promise<RecordLeafSource[]> {
  const out: RecordLeafSource[] = [];
  const whole = rows.filter((r) => !writable(r));
  for (const r of rows) if (writable(r)) out.push(r);
  if (whole.length > 0) out.push(...(await readRecordLeaves(db, whole.map((r) => r.project_id), whole.map((r) => r.seq))));
  return out;
}

/** A source's execution id and seq, whichever way it was read. */
export function recordLeafSourceKey(source: RecordLeafSource): { id: string; seq: string } {
  return 'row' in source ? { id: source.row.id, seq: source.seq } : { id: source.id, seq: String(source.seq) };
}

/**
 * One project's records at these seqs (a batch of its chain, say) as `recordLeafCanonical`'s
 * sources: one range scan of each week's `(project_id, seq)` index over the seqs' span (up to
 * twice the records asked for), where keys would cost a probe of every week's index per record;
 * what it missed, and the records whose timestamps the columns cannot carry, by key.
 */
export async function readRecordLeafSourcesOfSeqs(db: Queryable, projectId: string, seqs: ReadonlyArray<string | number>): Promise<Map<string, RecordLeafSource>> {
  const out = new Map<string, RecordLeafSource>();
  if (seqs.length === 0) return out;
  const { wanted, lo, hi } = seqSpan(seqs);
  const { rows } = await db.query<RecordLeafTextRow>(sourcesQuery(projectId, { lo, hi }, 2 * wanted.length));
  for (const r of rows) if (writable(r)) out.set(String(r.seq), r);
  const missing = wanted.map(String).filter((s) => !out.has(s));
  for (const r of await readRecordLeaves(db, missing.map(() => projectId), missing)) out.set(r.seq, r);
  return out;
}

/**
 * `readRecordLeafSourcesOfSeqs` handed to `each` a record at a time, each row as it arrives and
 * none kept (a reader of thousands of records at once otherwise holds them all while it hashes
 * them): `each` is called once for every record of the span the statement returns, then for
 * those it missed or whose timestamps the columns cannot carry, read by key; a seq not asked for
 * may be passed too (the span holds it), a seq asked for whose record is gone is not.
 */
export async function eachRecordLeafSourceOfSeqs(
  client: PoolClient,
  projectId: string,
  seqs: ReadonlyArray<string | number>,
  each: (seq: number, source: RecordLeafSource) => void,
): Promise<void> {
  if (seqs.length === 0) return;
  const { wanted, lo, hi } = seqSpan(seqs);
  // Seqs as numbers (as the pool parses int8): a string per row to key it by cost more than its check.
  const seen = new Set<number>();
  // Thrown from pg's row event, an error of `each` would escape the query: kept and thrown after it.
  const failed: { error?: Error } = {};
  const query = new Query(sourcesQuery(projectId, { lo, hi }, 2 * wanted.length));
  query.on('row', (r: RecordLeafTextRow) => {
    if (!writable(r) || failed.error) return;
    const seq = Number(r.seq);
    seen.add(seq);
    try {
      each(seq, r);
    } catch (err) {
      failed.error = err instanceof Error ? err : new Error(String(err));
    }
  });
  await new Promise<void>((resolve, reject) => {
    query.on('end', () => resolve());
    query.on('error', reject);
    void client.query(query);
  });
  if (failed.error) throw failed.error;
  const missing = wanted.filter((s) => !seen.has(s));
  for (const r of await readRecordLeaves(client, missing.map(() => projectId), missing)) each(Number(r.seq), r);
}
