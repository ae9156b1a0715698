/**
 * Permit read models: the timeline (stored events plus the expiry events derived from
 * expires_at), the bundle, the lineage and the NDJSON export.
 */
import { chainAllProjectEvents } from '../db/repositories/event-chain';
import { permitsEvents } from '../db/repositories/log-events';
import { decodeCursor, listChildPermits, listPermitLineage, listPermits, PermitRecord, listPermitsForExport } from '../db/repositories/permits';
import { errors } from '../errors';
import type { z } from 'zod';
import type { listQuerySchema } from './schemas';

type ListQuery = z.infer<typeof listQuerySchema>;
import { findUsageReport } from '../db/repositories/permit-usage-reports';
import { listEvidence } from '../db/repositories/permit-evidence';
import { AttestationRecord } from '../db/repositories/permit-attestations';
import { eventView, evidenceView, permitView, usageReportView } from './view';
import type { PermitContext } from './context';

export function permitReadModels(ctx: PermitContext) {
  const { db, clock, getPermit, loadAttestation } = ctx;

  /**
   * Events of a permit (stored, and derived from its call's record) plus the expiry events derived
   * from expires_at when neither holds them.
   */
  async function timelineEvents(p: PermitRecord, attestation: AttestationRecord | null) {
    const logged = (await permitsEvents(db, p.project_id, [p.id])).map((e) => eventView(e));
    const out: Array<ReturnType<typeof eventView> | ReturnType<typeof derivedEvent>> = [...logged];
    const now = clock.now();
    if (p.expires_at) {
      const exp = new Date(p.expires_at);
      if (!logged.some((e) => e.event_type === 'permit.expiry_scheduled')) out.push(derivedEvent(p, 'permit.expiry_scheduled', new Date(p.issued_at), { expires_at: exp.toISOString() }));
      const consumedBefore = (d: Date | null) => d !== null && new Date(d).getTime() < exp.getTime();
      const closedEarly =
        consumedBefore(p.settled_at) || consumedBefore(p.revoked_at) || (p.reservation_state === 'released' && consumedBefore(p.released_at)) ||
        (attestation !== null && attestation.permit_id === p.id && new Date(attestation.recorded_at).getTime() < exp.getTime());
      if (exp.getTime() <= now.getTime() && !closedEarly && !logged.some((e) => e.event_type === 'permit.expired')) {
        out.push(derivedEvent(p, 'permit.expired', exp, { expires_at: exp.toISOString() }));
      }
    }
    return out.sort((a, b) => String(a.timestamp).localeCompare(String(b.timestamp)));
  }

  function derivedEvent(p: PermitRecord, type: string, at: Date, metadata: Record<string, unknown>) {
    return {
      id: null,
      seq: null,
      timestamp: at.toISOString(),
      event_type: type,
      source: 'permits',
      phase: 'permit',
      provider: p.provider,
      model: p.model,
      permit_id: p.id,
      request_id: p.request_id,
      job_id: null,
      session_id: null,
      metadata: { ...metadata, derived_from: 'expires_at' },
      prev_hash: null,
      hash: null,
      derived: true,
    };
  }

  async function bundle(projectId: string, permitId: string) {
    const p = await getPermit(projectId, permitId);
    // A bundle is evidence: its events are chained before it is built (the sequencer may lag ~250 ms).
    await chainAllProjectEvents(db, projectId);
    const attestation = await loadAttestation(p);
    const [events, report, evidence, children] = await Promise.all([
      timelineEvents(p, attestation),
      findUsageReport(db, projectId, p.id),
      listEvidence(db, projectId, p.id),
      listChildPermits(db, projectId, p.id),
    ]);
    return {
      object: 'permit_bundle',
      permit: permitView(p, clock.now(), { attestation }),
      events,
      usage_report: report ? usageReportView(report) : null,
      evidence: evidence.map(evidenceView),
      child_permit_ids: children.map((c) => c.id),
    };
  }

  async function lineage(projectId: string, permitId: string) {
    const p = await getPermit(projectId, permitId);
    const chain = await listPermitLineage(db, projectId, p.id); // self first, then ancestors
    const children = await listChildPermits(db, projectId, p.id);
    const now = clock.now();
    return {
      object: 'permit_lineage',
      permit_id: p.id,
      root_permit_id: chain[chain.length - 1].id,
      chain: chain.map((x) => x.id).reverse(),
      ancestors: chain.slice(1).map((x) => ({ ...permitView(x, now), lineage_reason: (x.metadata?.lineage_reason as string) ?? null })),
      children: children.map((x) => permitView(x, now)),
    };
  }

  async function* exportLines(projectId: string, window: { from: Date; to: Date }, includeEvents: boolean): AsyncGenerator<string> {
    const now = clock.now();
    yield JSON.stringify({ object: 'permit_export', project_id: projectId, from: window.from.toISOString(), to: window.to.toISOString(), generated_at: now.toISOString() }) + '\n';
    let after: { issuedAt: Date; id: string } | null = null;
    let count = 0;
    for (;;) {
      const page = await listPermitsForExport(db, projectId, window, { after, limit: 200 });
      if (page.length === 0) break;
      const events = includeEvents ? await permitsEvents(db, projectId, page.map((p) => p.id)) : [];
      for (const p of page) {
        const line: Record<string, unknown> = { ...permitView(p, now) };
        if (includeEvents) line.events = events.filter((e) => e.permit_id === p.id).map((e) => eventView(e));
        count += 1;
        yield JSON.stringify(line) + '\n';
      }
      const last = page[page.length - 1];
      after = { issuedAt: new Date(last.issued_at), id: last.id };
      if (page.length < 200) break;
    }
    yield JSON.stringify({ object: 'permit_export_end', count }) + '\n';
  }
  /** GET /v1/permits and the management list: filters, keyset cursor, each permit in its view. */
  async function listPage(projectId: string, q: ListQuery) {
    if (q.cursor && !decodeCursor(q.cursor)) throw errors.validation([{ path: 'cursor', message: 'not a cursor returned by this list', code: 'custom' }]);
    const { created_after: after, created_before: before, cursor, limit, ...match } = q;
    const page = await listPermits(
      db,
      projectId,
      { ...match, issued_after: after ? new Date(after) : undefined, issued_before: before ? new Date(before) : undefined },
      { cursor: cursor ?? null, limit },
    );
    const data = await Promise.all(page.data.map((p) => ctx.view(p)));
    return { object: 'list' as const, data, has_more: page.next_cursor !== null, next_cursor: page.next_cursor };
  }

  return { timelineEvents, bundle, lineage, exportLines, listPage };
}
