/**
 * A pipeline call's record (an execution row with a lifecycle) is one leaf of its project's chain:
 * the sequencer chains it among the project's events in seq order, as its leaf event
 * (`call.recorded`, recordLeafEvent); verification recomputes that leaf from the stored execution
 * row and permit, so an edit of any column it carries is reported at the record; checkpoints and
 * exports carry it like any event, and both offline verifiers check an export of it unchanged.
 *
 * On a database of its own: the tests edit records and chain rows, which the sequencers and
 * checkpoint rounds of other test files' Tollgates would otherwise meet.
 */
import { createGovernedCallActivities } from '../../../activities/governed-call';
import { callInput, instantProvider } from '../../../bench/lib/governed-calls';
import { systemClock } from '../../../src/clock';
import { buildExportPart, exportBundle, finalizeExport, prepareExport } from '../../../src/compliance/build';
import { readTar } from '../../../src/compliance/tar';
import { verifyExport } from '../../../src/compliance/verify-export';
import type { Db } from '../../../src/db/pool';
import { insertExport } from '../../../src/db/repositories/compliance-exports';
import { appendEvents } from '../../../src/db/repositories/events';
import { GENESIS_HASH } from '../../../src/events/canonical';
import { chainAllProjectEvents, chainEvents } from '../../../src/db/repositories/event-chain';
import { verifyEventChain } from '../../../src/db/repositories/event-chain-verification';
import { createProject } from '../../../src/db/repositories/projects';
import { readRecordLeafSourceById, recordLeafCanonical } from '../../../src/db/repositories/record-leaf-text';
import { createGovernance } from '../../../src/governance';
import { complianceSigner } from '../../../src/integrity/keys';
import { issueCheckpoint } from '../../../src/integrity/log';
import { leafHash } from '../../../src/integrity/hashes';
import { verifyLog } from '../../../src/integrity/verify-log';
import { createLogger } from '../../../src/logger';
import { pricing } from '../../../src/pricing';
import { ownDatabasePool } from '../../support/own-database';
import { goVerifier } from '../../e2e/governance/helpers';

describe('call records in the chain', () => {
  const own = ownDatabasePool('chain_records');
  // The run's archive directory (test/support/global-setup.ts) holds the export files.
  const archiveStore = { kind: 'directory' as const, dir: process.env.ARCHIVE_DIR! };
  const config = () => ({ env: 'test' as const, masterKey: undefined, databaseUrl: own.url, archiveStore });

  /** One governed call through the in-process pipeline (govern, dispatch, record); returns its execution id. */
  async function pipelineCall(db: Db, projectId: string): Promise<string> {
    const calls = createGovernedCallActivities({ db, clock: systemClock, logger: createLogger('warn'), governance: createGovernance({ db, clock: systemClock }), pricing, providers: instantProvider(), recordCommit: 'sync' });
    const c = callInput(projectId);
    const gov = await calls.govern({ input: c.input, request: c.request, route: 'executions', inspectableText: [c.prompt], permitMetadata: {}, inProcess: {} });
    expect(gov.decision).toBe('allow');
    const { outcome } = await calls.dispatch(c.input);
    await calls.record(c.input, { kind: 'dispatched', gov, outcome });
    return c.input.executionId;
  }

  const event = (projectId: string, i: number) => ({ projectId, eventType: 'test.marker', source: 'test', phase: 'test', metadata: { i } });

  /** A project whose log holds, in this order: 2 events, 2 pipeline calls, 1 event, 1 pipeline call. */
  async function mixedLog() {
    const project = await createProject(own.db, { name: 'records', plan: 'production' });
    await appendEvents(own.db, [event(project.id, 0), event(project.id, 1)]);
    const calls = [await pipelineCall(own.db, project.id), await pipelineCall(own.db, project.id)];
    await appendEvents(own.db, [event(project.id, 2)]);
    calls.push(await pipelineCall(own.db, project.id));
    await chainAllProjectEvents(own.db, project.id);
    const { rows } = await own.db.query<{ id: string; seq: string; permit_id: string }>('SELECT id, seq, permit_id FROM calls WHERE project_id = $1 ORDER BY seq', [project.id]);
    expect(rows.map((r) => r.id)).toEqual(calls);
    return { projectId: project.id, records: rows.map((r) => ({ id: r.id, seq: Number(r.seq), permitId: r.permit_id })) };
  }

  const chainOf = async (projectId: string) =>
    (
      await own.db.query<{ seq: string; chain_pos: string; prev_hash: string; hash: string; leaf_hash: Buffer }>(
        'SELECT seq, chain_pos, prev_hash, hash, leaf_hash FROM event_chain WHERE project_id = $1 ORDER BY chain_pos',
        [projectId],
      )
    ).rows;

  it('chains records among the events in seq order, each as its call.recorded leaf; the chain and a checkpoint of it verify', async () => {
    const { projectId, records } = await mixedLog();
    const chain = await chainOf(projectId);
    const { rows: events } = await own.db.query<{ seq: string }>('SELECT seq FROM events WHERE project_id = $1', [projectId]);
    const expected = [...events.map((e) => Number(e.seq)), ...records.map((r) => r.seq)].sort((a, b) => a - b);
    expect(chain.map((c) => Number(c.seq))).toEqual(expected);
    expect(chain.map((c) => Number(c.chain_pos))).toEqual(expected.map((_, i) => i + 1));
    expect(await own.db.query('SELECT 1 FROM event_chain_pending WHERE project_id = $1', [projectId])).toMatchObject({ rowCount: 0 });

    // Each record's chain row links and hashes its leaf event, written from the stored record and permit.
    for (const r of records) {
      const pos = chain.findIndex((c) => Number(c.seq) === r.seq);
      const prev = pos === 0 ? GENESIS_HASH : chain[pos - 1].hash;
      expect(chain[pos].prev_hash).toBe(prev);
      const leaf = (await readRecordLeafSourceById(own.db, projectId, r.id))!;
      const canonical = recordLeafCanonical(leaf, prev);
      const parsed = JSON.parse(canonical);
      expect(parsed).toMatchObject({ seq: r.seq, id: r.id, request_id: r.id, permit_id: r.permitId, event_type: 'call.recorded', source: 'calls', phase: 'record', prev_hash: prev });
      const { rows } = await own.db.query('SELECT status, cost_usd_micros, input_tokens, output_tokens FROM calls WHERE id = $1', [r.id]);
      expect(parsed.metadata.record).toMatchObject({ status: rows[0].status, cost_usd_micros: Number(rows[0].cost_usd_micros), input_tokens: rows[0].input_tokens, output_tokens: rows[0].output_tokens });
      expect(parsed.metadata.record.lifecycle).toMatchObject({ end: 'ok' });
      // A column added later (session_id) is in a leaf only where it is set: records chained before it still verify.
      expect(parsed.metadata.record).not.toHaveProperty('session_id');
      expect(parsed.metadata.permit).toMatchObject({ decision: 'allow' });
      expect(chain[pos].leaf_hash.equals(leafHash(canonical))).toBe(true);
    }

    await expect(verifyEventChain(own.db, projectId)).resolves.toMatchObject({ ok: true, count: chain.length, broken_at_seq: null, head_hash: chain[chain.length - 1].hash });
    const signer = await complianceSigner(own.db, config());
    expect(Number((await issueCheckpoint(own.db, signer, projectId)).issued?.tree_size)).toBe(chain.length);
    const log = await verifyLog(own.db, projectId);
    expect(log).toMatchObject({ ok: true, events_verified: chain.length, broken_at_seq: null, checkpoint: { tree_size: chain.length, signature: 'valid', root: 'matches_chain' } });

    // A record's chain row without its stored leaf hash: the checkpoint's recomputation writes the leaf out from the record.
    await own.db.query('UPDATE event_chain SET leaf_hash = NULL WHERE seq = $1', [records[1].seq]);
    await expect(verifyLog(own.db, projectId)).resolves.toMatchObject({ ok: true, checkpoint: { root: 'matches_chain' } });
    await own.db.query('UPDATE calls SET output_tokens = output_tokens + 1 WHERE id = $1', [records[1].id]);
    const edited = await verifyLog(own.db, projectId);
    expect(edited).toMatchObject({ ok: false, broken_at_seq: records[1].seq, checkpoint: { root: 'chain_broken' } });
    expect(edited.failures[1]).toMatch(new RegExp(`the call record \\(${records[1].id}\\) no longer matches its chain hash`));
  });

  it('hashes names written with an escape as stored, whatever the engine JSON.parse-d before', async () => {
    // V8's JSON.parse can read a member name written with an escape (`"\t\t"`) as the name its
    // raw characters spell (`"\\t"`), when an object of the same earlier members had that member
    // (src/db/repositories/record-leaf-text.ts); the leaf chained and the leaf verified are both
    // written from jsonb text, so each hashes what is stored.
    JSON.parse('{"`": 0, "\\\\t": 0}');
    const misread = Object.keys(JSON.parse('{"`": 0, "\\t\\t": 1}') as object)[1] !== '\t\t';
    const project = await createProject(own.db, { name: 'escaped names', plan: 'production' });
    const names = { x: { '`': 0, '\t\t': 1 } };
    await appendEvents(own.db, [{ ...event(project.id, 0), metadata: names }]);
    const id = await pipelineCall(own.db, project.id);
    // As a record stored with such names (before it is chained).
    await own.db.query('UPDATE calls SET envelope = envelope || $2::jsonb WHERE id = $1', [id, JSON.stringify(names)]);
    await chainAllProjectEvents(own.db, project.id);
    const stored = await own.db.query<{ t: string }>("SELECT (envelope->'x')::text AS t FROM calls WHERE id = $1 UNION ALL SELECT (metadata->'x')::text FROM events WHERE project_id = $2 AND event_type = 'test.marker'", [id, project.id]);
    expect(stored.rows.map((r) => r.t)).toEqual(['{"`": 0, "\\t\\t": 1}', '{"`": 0, "\\t\\t": 1}']);
    const chain = await chainOf(project.id);
    await expect(verifyEventChain(own.db, project.id)).resolves.toMatchObject({ ok: true, count: chain.length, broken_at_seq: null });
    await expect(verifyLog(own.db, project.id)).resolves.toMatchObject({ ok: true, events_verified: chain.length });
    // The record's leaf, as the chain holds it, carries the names as stored.
    const { seq } = (await own.db.query<{ seq: string }>('SELECT seq FROM calls WHERE id = $1', [id])).rows[0];
    const pos = chain.findIndex((c) => Number(c.seq) === Number(seq));
    const leaf = recordLeafCanonical((await readRecordLeafSourceById(own.db, project.id, id))!, chain[pos].prev_hash);
    expect(leaf).toContain('"x":{"\\t\\t":1,"`":0}');
    expect(chain[pos].leaf_hash.equals(leafHash(leaf))).toBe(true);
    process.stdout.write(`JSON.parse on this engine misreads an escaped name: ${misread}\n`);
  });

  it('chains the records of several projects in one round, each after its own head', async () => {
    const [a, b] = [await createProject(own.db, { name: 'round a', plan: 'production' }), await createProject(own.db, { name: 'round b', plan: 'production' })];
    await appendEvents(own.db, [event(a.id, 0)]);
    await pipelineCall(own.db, b.id);
    await pipelineCall(own.db, a.id);
    await appendEvents(own.db, [event(b.id, 1)]);
    await pipelineCall(own.db, b.id);
    const eventsOf = async (project: string) => Number((await own.db.query<{ n: string }>('SELECT count(*) AS n FROM events WHERE project_id = $1', [project])).rows[0].n);
    const [na, nb] = [(await eventsOf(a.id)) + 1, (await eventsOf(b.id)) + 2];
    const round = await chainEvents(own.db, [a.id, b.id]);
    expect(round).toEqual({ events: na + nb, fullProjects: [] });
    for (const [project, n] of [[a.id, na], [b.id, nb]] as const) {
      const chain = await chainOf(project);
      expect(chain).toHaveLength(n);
      expect(chain.map((c) => Number(c.seq))).toEqual(chain.map((c) => Number(c.seq)).sort((x, y) => x - y));
      await expect(verifyEventChain(own.db, project)).resolves.toMatchObject({ ok: true, count: n });
    }
  });

  it('reports an edit of any column of a chained record, or of its permit decision, at that record', async () => {
    const { projectId, records } = await mixedLog();
    const chain = await chainOf(projectId);
    const target = records[0];
    const position = chain.findIndex((c) => Number(c.seq) === target.seq) + 1;
    const tampers: [table: 'calls' | 'permits', column: string, set: string][] = [
      ['calls', 'cost_usd_micros', 'cost_usd_micros + 1'],
      ['calls', 'status', `'failed'`],
      ['calls', 'status_code', '500'],
      ['calls', 'input_tokens', 'input_tokens + 1'],
      ['calls', 'error_code', `'provider_error'`],
      ['calls', 'created_at', `created_at - interval '1 second'`],
      ['calls', 'completed_at', `completed_at + interval '1 second'`],
      ['calls', 'envelope', `jsonb_set(envelope, '{usage,total_tokens}', '19')`],
      ['calls', 'lifecycle', `jsonb_set(lifecycle, '{end}', '"interrupted"')`],
      ['calls', 'model', `'gpt-4o'`],
      ['permits', 'decision', `'review'`],
      ['permits', 'reason_code', `'tampered'`],
      ['permits', 'reserved_cost_micros', 'reserved_cost_micros + 1'],
    ];
    for (const [table, column, set] of tampers) {
      const id = table === 'calls' ? target.id : target.permitId;
      const { rows } = await own.db.query<{ doc: unknown }>(`SELECT to_jsonb(t) AS doc FROM ${table} t WHERE id = $1`, [id]);
      await own.db.query(`UPDATE ${table} SET ${column} = ${set} WHERE id = $1`, [id]);
      const r = await verifyEventChain(own.db, projectId);
      expect([column, r]).toEqual([column, { ok: false, count: position - 1, broken_at_seq: target.seq, head_hash: chain[position - 2].hash }]);
      // Checked in a worker thread (as a long chain is), the answer is the same.
      if (column === 'cost_usd_micros' || column === 'decision') expect([column, await verifyEventChain(own.db, projectId, { workers: 1 })]).toEqual([column, r]);
      // Put back: the chain verifies again, so the next edit is the only one.
      await own.db.query(`UPDATE ${table} t SET ${column} = o.${column} FROM jsonb_populate_record(NULL::${table}, $2::jsonb) o WHERE t.id = $1`, [id, JSON.stringify(rows[0].doc)]);
      await expect(verifyEventChain(own.db, projectId)).resolves.toMatchObject({ ok: true, count: chain.length });
    }

    // A record deleted after it was chained is a gap at its seq.
    const { rows: saved } = await own.db.query<{ doc: unknown }>('SELECT to_jsonb(t) AS doc FROM calls t WHERE id = $1', [target.id]);
    await own.db.query('DELETE FROM calls WHERE id = $1', [target.id]);
    await expect(verifyEventChain(own.db, projectId)).resolves.toMatchObject({ ok: false, count: position - 1, broken_at_seq: target.seq });
    await expect(verifyEventChain(own.db, projectId, { workers: 2 })).resolves.toMatchObject({ ok: false, count: position - 1, broken_at_seq: target.seq });
    await own.db.query('INSERT INTO calls SELECT * FROM jsonb_populate_record(NULL::calls, $1::jsonb)', [JSON.stringify(saved[0].doc)]);
    await expect(verifyEventChain(own.db, projectId)).resolves.toMatchObject({ ok: true, count: chain.length });
    const inThread = await verifyEventChain(own.db, projectId, { treeSize: chain.length });
    expect(await verifyEventChain(own.db, projectId, { treeSize: chain.length, workers: 2 })).toEqual(inThread);

    // A record whose chain row was removed (the last leaf: no gap in positions) is neither chained nor pending.
    const last = records[records.length - 1];
    expect(Number(chain[chain.length - 1].seq)).toBe(last.seq);
    await own.db.query('DELETE FROM event_chain WHERE seq = $1', [last.seq]);
    await expect(verifyEventChain(own.db, projectId)).resolves.toMatchObject({ ok: false, count: chain.length - 1, broken_at_seq: last.seq });
  });

  it('exports records as call.recorded lines that the TS and Go verifiers check unchanged; an edited record fails at its index', async () => {
    const since = new Date(Date.now() - 60_000);
    const { projectId, records } = await mixedLog();
    const chain = await chainOf(projectId);
    const signer = await complianceSigner(own.db, config());
    const deps = { db: own.db, config: config() };

    async function exportFiles(tag: string) {
      const row = await insertExport(own.db, { id: `exp_rec_${tag}_${projectId}`, projectId, since, until: new Date(Date.now() + 60_000), include: ['events', 'executions', 'permits'], requestedBy: 'test' });
      const { parts } = await prepareExport(deps, row.id);
      for (const part of parts) await buildExportPart(deps, row.id, part);
      await finalizeExport(deps, row.id);
      const bundle = await exportBundle(deps, row.id);
      const pieces: Buffer[] = [];
      for await (const piece of bundle.pieces) pieces.push(piece);
      return readTar(Buffer.concat(pieces));
    }

    const files = await exportFiles('a');
    const result = verifyExport(files, signer.vkey);
    expect(result).toMatchObject({ ok: true, events_verified: chain.length, failures: [] });
    const lines = files.get('events.ndjson')!.toString('utf8').trim().split('\n');
    const proofs = files.get('proofs.ndjson')!.toString('utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((l) => JSON.parse(l).seq)).toEqual(chain.map((c) => Number(c.seq)));
    const recordIndex = chain.findIndex((c) => Number(c.seq) === records[1].seq);
    const recordLine = JSON.parse(lines[recordIndex]);
    expect(recordLine).toMatchObject({ event_type: 'call.recorded', id: records[1].id, seq: records[1].seq });
    expect(leafHash(lines[recordIndex]).equals(Buffer.from(proofs[recordIndex].leaf_hash, 'base64'))).toBe(true);
    // The executions file holds the same records, with the seq their leaves carry.
    const executions = files.get('executions.ndjson')!.toString('utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(executions.map((e) => [e.id, Number(e.seq)]).sort()).toEqual(records.map((r) => [r.id, r.seq]).sort());

    const go = goVerifier();
    if (!go) console.warn('SKIPPED: the Go check of the export needs `go` on PATH');
    else {
      const input = {
        vkey: signer.vkey,
        checkpoint: files.get('checkpoint.note')!.toString(),
        leaf_b64: Buffer.from(lines[recordIndex]).toString('base64'),
        leaf_index: proofs[recordIndex].index,
        inclusion_proof: proofs[recordIndex].proof,
        notes: [files.get('manifest.note')!.toString()],
      };
      expect(go(input)).toMatchObject({ status: 0, out: { ok: true, inclusion: true, notes: 1 } });
      const altered = go({ ...input, leaf_b64: Buffer.from(lines[recordIndex].replace('"call.recorded"', '"call.recordeD"')).toString('base64') });
      expect(altered.status).toBe(1);
    }

    // The record's cost edited in the database: a new export of the same log fails at that record's index.
    await own.db.query('UPDATE calls SET cost_usd_micros = cost_usd_micros + 1000 WHERE id = $1', [records[1].id]);
    const edited = verifyExport(await exportFiles('b'), signer.vkey);
    expect(edited.ok).toBe(false);
    expect(edited.failures[0]).toMatchObject({ check: 'event_altered', index: recordIndex, position: recordIndex + 1, event_id: records[1].id });
  }, 300_000);
});
