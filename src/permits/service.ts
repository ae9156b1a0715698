/**
 * The permit-first API's logic (routes in src/api/routes/permits.ts). Governance decides and
 * reserves (src/governance); this module adds idempotency, revalidation, closeout, attestation,
 * revocation, evidence and the read models. Rules: docs/decisions.md "Permits and policies".
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Clock } from '../clock';
import { Db, withTransaction } from '../db/pool';
import { newId } from '../ids';
import { ApiError, errors } from '../errors';
import { appendEvents, chainAllProjectEvents, EventRecord, listEventsByPermit } from '../db/repositories/events';
import { findPermit, insertPermit, listChildPermits, listPermitLineage, PermitRecord } from '../db/repositories/permits';
import { lockProjectGovernance } from '../db/repositories/policies';
import { addToSpend } from '../db/repositories/spend';
import {
  findAttestation,
  findPermitHeadByIdempotencyKey,
  findUsageReport,
  insertAttestation,
  insertEvidence,
  insertUsageReport,
  listDescendantPermits,
  listEvidence,
  listEventsForPermits,
  listPermitsForExport,
  listUsageReports,
  LOCK_PERMIT_IDEMPOTENCY,
  LOCK_PERMIT_USAGE,
  withKeyLock,
  AttestationRecord,
} from '../db/repositories/permit-first';
import { DEFAULT_ALLOW_TTL_SECONDS, Governance, GovernanceRequest } from '../governance';
import { currentPeriods, PERIOD_KINDS } from '../governance/periods';
import { DEFAULT_AUDIO_SECONDS_ESTIMATE, DEFAULT_OUTPUT_TOKENS_ESTIMATE, pricing } from '../pricing';
import { makeUsage } from '../providers/shared/usage';
import type { ProviderId } from '../providers/types';
import type { AuthContext } from '../auth-context';
import type { PermitRequest, UsageReport } from './schemas';
import { z } from 'zod';
import { attestSchema, evidenceSchema, revokeSchema } from './schemas';
import { attestationView, decisionExcerpt, eventView, evidenceView, permitView, PermitView, usageReportView } from './view';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : null);

/** The surface name permit-first decisions are evaluated and stored under (policy match.route). */
export const PERMITS_SURFACE = 'permits';

export interface CreateResult {
  body: PermitView;
  replayed: boolean;
  revalidatedFrom: string | null;
}

export function createPermitService(deps: { db: Db; clock: Clock; governance: Governance }) {
  const { db, clock, governance } = deps;

  function ownProject(auth: AuthContext, projectId: string): void {
    // Same rule as /v1/projects/{id}: another tenant's id is not confirmed (404, not 403).
    if (projectId !== auth.projectId) throw errors.notFound('Project', projectId);
  }

  /** Fills provider/model like the executions route: both = explicit; one = default for the other. */
  function resolveTarget(b: PermitRequest): { provider: ProviderId; model: string } {
    if (b.provider && b.model) {
      const r = pricing.resolveModel(b.model, b.provider);
      return { provider: b.provider, model: r && r !== 'ambiguous' ? r.model : b.model };
    }
    if (b.model) {
      const r = pricing.resolveModel(b.model);
      if (r === null || r === 'ambiguous') {
        throw errors.validation([{ path: 'provider', message: `model "${b.model}" is ${r === null ? 'unknown' : 'offered by several providers'}; give provider`, code: 'custom' }]);
      }
      return { provider: r.provider, model: r.model };
    }
    const t = pricing.defaultTarget(b.operation, b.provider);
    if (!t) throw errors.validation([{ path: 'provider', message: `no default model for ${b.operation}${b.provider ? ` on ${b.provider}` : ''}; give model`, code: 'custom' }]);
    return t;
  }

  /**
   * The request's estimate: the caller's, or — when it gives none of the three estimate fields —
   * a default: no input tokens, DEFAULT_OUTPUT_TOKENS_ESTIMATE output tokens for operations that
   * produce text, one image for generate.image, DEFAULT_AUDIO_SECONDS_ESTIMATE for OpenAI
   * transcription. `decisionMetadata` says so in the decision (docs/decisions.md, "Permits without
   * an estimate").
   */
  function estimateOf(b: PermitRequest, provider: ProviderId, model: string) {
    const given = b.estimated_cost_usd_micros !== undefined || b.estimated_input_tokens !== undefined || b.estimated_output_tokens !== undefined;
    if (given) {
      const input = b.estimated_input_tokens ?? 0;
      const output = b.estimated_output_tokens ?? 0;
      const cost = b.estimated_cost_usd_micros ?? pricing.costMicros(provider, model, makeUsage({ input_tokens: input, output_tokens: output }, true));
      return { input, output, cost, decisionMetadata: undefined };
    }
    const op = b.operation;
    const producesText = op === 'generate.text' || op === 'understand.image' || (op === 'transcribe.audio' && provider === 'google');
    const output = producesText ? DEFAULT_OUTPUT_TOKENS_ESTIMATE : 0;
    const images = op === 'generate.image' ? 1 : undefined;
    const audioSeconds = op === 'transcribe.audio' && provider === 'openai' ? DEFAULT_AUDIO_SECONDS_ESTIMATE : undefined;
    const cost = pricing.costMicros(provider, model, makeUsage({ input_tokens: 0, output_tokens: output, images, audio_seconds: audioSeconds }, true));
    const basis: Record<string, number> = { input_tokens: 0, output_tokens: output };
    if (images !== undefined) basis.images = images;
    if (audioSeconds !== undefined) basis.audio_seconds = audioSeconds;
    return { input: 0, output, cost, decisionMetadata: { estimate_source: 'default', estimate_basis: basis } };
  }

  function governanceRequest(projectId: string, requestId: string, b: PermitRequest): GovernanceRequest & { decisionMetadata?: Record<string, unknown> } {
    const { provider, model } = resolveTarget(b);
    const e = estimateOf(b, provider, model);
    return {
      projectId,
      requestId,
      route: PERMITS_SURFACE,
      operation: b.operation,
      provider,
      model,
      estimatedInputTokens: e.input,
      estimatedOutputTokens: e.output,
      estimatedCostMicros: e.cost,
      workflowId: b.workflow_id ?? null,
      metadata: { ...(b.metadata ?? {}), ...(b.route ? { route: b.route } : {}) },
      // No inspectableText: permit-first mode never runs the prompt firewall.
      ...(e.decisionMetadata ? { decisionMetadata: e.decisionMetadata } : {}),
    };
  }

  /** Hash of the semantic payload: every field but the idempotency key, defaults applied. */
  function payloadHash(b: PermitRequest): string {
    const { idempotency_key: _k, ...rest } = b;
    return sha256(canonicalize({ ...rest, metadata: rest.metadata ?? {} }) as string);
  }

  async function loadAttestation(p: PermitRecord): Promise<AttestationRecord | null> {
    return p.decision === 'review' || p.parent_permit_id ? findAttestation(db, p.project_id, p.id) : null;
  }

  async function view(p: PermitRecord): Promise<PermitView> {
    return permitView(p, clock.now(), { attestation: await loadAttestation(p) });
  }

  /** Releases the reservation of an allow whose expires_at has passed (event permit.expired). */
  async function expireIfStale(p: PermitRecord): Promise<PermitRecord> {
    const now = clock.now();
    if (p.reservation_state === 'active' && p.expires_at && new Date(p.expires_at).getTime() <= now.getTime()) {
      await governance.expireStaleReservations(now);
      return (await findPermit(db, p.project_id, p.id)) ?? p;
    }
    return p;
  }

  async function getPermit(projectId: string, permitId: string): Promise<PermitRecord> {
    const p = await findPermit(db, projectId, permitId);
    if (!p) throw errors.notFound('Permit', permitId);
    return expireIfStale(p);
  }

  async function create(auth: AuthContext, b: PermitRequest): Promise<CreateResult> {
    ownProject(auth, b.project_id);
    const key = b.idempotency_key ?? newId('idem');
    const hash = payloadHash(b);
    const requestedRoute = b.route ?? null;
    return withKeyLock(db, LOCK_PERMIT_IDEMPOTENCY, `${auth.projectId}:${key}`, async () => {
      let head = await findPermitHeadByIdempotencyKey(db, auth.projectId, key);
      if (!head) {
        const req = governanceRequest(auth.projectId, newId('req'), b);
        const d = await governance.evaluate(req, {
          persist: true,
          ttlSeconds: b.ttl_seconds,
          decisionMetadata: req.decisionMetadata,
          idempotencyKey: key,
          permitMetadata: { idempotency_key: key, request_hash: hash, requested_route: requestedRoute, key_id: auth.keyId },
        });
        const p = await getPermit(auth.projectId, d.permit_id);
        return { body: await view(p), replayed: false, revalidatedFrom: null };
      }
      if (head.metadata?.request_hash !== hash) throw errors.idempotencyConflict(key);
      head = await expireIfStale(head);
      const stale = head.decision === 'allow' && !head.revoked_at && (head.reservation_state === 'expired' || head.reservation_state === 'released');
      if (!stale) return { body: await view(head), replayed: true, revalidatedFrom: null };
      // Revalidate: a fresh evaluation under today's policy and counters, linked to the stale permit.
      const req = governanceRequest(auth.projectId, head.request_id ?? newId('req'), b);
      const d = await governance.evaluate(req, {
        persist: true,
        ttlSeconds: b.ttl_seconds,
        decisionMetadata: req.decisionMetadata,
        parentPermitId: head.id,
        idempotencyKey: null, // the unique column stays on the key's first permit
        permitMetadata: {
          idempotency_key: key,
          request_hash: hash,
          requested_route: requestedRoute,
          key_id: auth.keyId,
          lineage_reason: 'revalidation',
          revalidated_from: head.id,
        },
      });
      const p = await getPermit(auth.projectId, d.permit_id);
      return { body: await view(p), replayed: false, revalidatedFrom: head.id };
    });
  }

  async function dryRun(auth: AuthContext, b: PermitRequest) {
    ownProject(auth, b.project_id);
    const req = governanceRequest(auth.projectId, newId('req'), b);
    const d = await governance.evaluate(req, { persist: false, ttlSeconds: b.ttl_seconds, decisionMetadata: req.decisionMetadata });
    return {
      object: 'permit_dry_run',
      dry_run: true,
      // Nothing was stored: there is no permit to refer to later.
      permit_id: null,
      ...decisionExcerpt(d),
      project_id: auth.projectId,
      operation: req.operation,
      provider: req.provider,
      model: req.model,
      workflow_id: req.workflowId ?? null,
      route: b.route ?? null,
      estimate: { input_tokens: req.estimatedInputTokens, output_tokens: req.estimatedOutputTokens, cost_usd_micros: req.estimatedCostMicros },
    };
  }

  /** Stored events of a permit plus the expiry events derived from expires_at when not stored. */
  async function timelineEvents(p: PermitRecord, attestation: AttestationRecord | null) {
    const stored = (await listEventsByPermit(db, p.project_id, p.id)).map((e) => eventView(e));
    const out: Array<ReturnType<typeof eventView> | ReturnType<typeof derivedEvent>> = [...stored];
    const now = clock.now();
    if (p.expires_at) {
      const exp = new Date(p.expires_at);
      if (!stored.some((e) => e.event_type === 'permit.expiry_scheduled')) out.push(derivedEvent(p, 'permit.expiry_scheduled', new Date(p.issued_at), { expires_at: exp.toISOString() }));
      const consumedBefore = (d: Date | null) => d !== null && new Date(d).getTime() < exp.getTime();
      const closedEarly =
        consumedBefore(p.settled_at) || consumedBefore(p.revoked_at) || (p.reservation_state === 'released' && consumedBefore(p.released_at)) ||
        (attestation !== null && attestation.permit_id === p.id && new Date(attestation.recorded_at).getTime() < exp.getTime());
      if (exp.getTime() <= now.getTime() && !closedEarly && !stored.some((e) => e.event_type === 'permit.expired')) {
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
      const page = await listPermitsForExport(db, projectId, window, after, 200);
      if (page.length === 0) break;
      const events = includeEvents ? await listEventsForPermits(db, projectId, page.map((p) => p.id)) : [];
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

  // ---- usage closeout ----

  async function recordUsage(auth: AuthContext, permitId: string, b: UsageReport): Promise<{ body: Record<string, unknown>; replayed: boolean }> {
    return withKeyLock(db, LOCK_PERMIT_USAGE, permitId, async () => {
      let p = await getPermit(auth.projectId, permitId);
      const { usage_idempotency_key: key, ...values } = b;
      const hash = sha256(canonicalize(values) as string);
      const existing = await findUsageReport(db, auth.projectId, permitId);
      if (existing) {
        if (existing.usage_idempotency_key !== key) {
          throw errors.conflict('usage_already_recorded', 'This permit already has a usage closeout under another usage_idempotency_key', {
            permit_id: permitId,
            usage_idempotency_key: existing.usage_idempotency_key,
          });
        }
        if (existing.request_hash !== hash) {
          throw new ApiError(409, 'idempotency_conflict', 'This usage_idempotency_key was already used with different closeout values', {
            idempotency_key: key,
            usage_idempotency_key: key,
          });
        }
        return { body: existing.response, replayed: true };
      }
      if (p.decision !== 'allow') {
        throw errors.conflict('permit_not_allowed', `A ${p.decision} permit has no usage to close out`, { permit_id: permitId, decision: p.decision });
      }
      const cost = b.billed_cost_usd_micros ?? 0;
      if (b.status === 'completed' || cost > 0) {
        await governance.settle(permitId, { costMicros: cost, inputTokens: b.input_tokens, outputTokens: b.output_tokens });
      } else {
        await governance.release(permitId, 'usage_failed');
      }
      p = (await findPermit(db, auth.projectId, permitId))!;
      const now = clock.now();
      const record = {
        permit_id: permitId,
        project_id: auth.projectId,
        usage_idempotency_key: key,
        request_hash: hash,
        status: b.status,
        input_tokens: b.input_tokens,
        output_tokens: b.output_tokens,
        billed_cost_micros: cost,
        verification: (b.verification as Record<string, unknown> | undefined) ?? null,
        error: b.error ?? null,
        occurred_at: b.occurred_at ? new Date(b.occurred_at) : null,
        reported_at: now,
        reported_by: `api_key:${auth.keyId}`,
        response: {} as Record<string, unknown>,
      };
      record.response = {
        object: 'permit_usage_report',
        permit_id: permitId,
        ...usageReportView(record),
        estimated_cost_usd_micros: p.estimated_cost_micros === null ? null : Number(p.estimated_cost_micros),
        reservation: { state: p.reservation_state, reserved_cost_usd_micros: Number(p.reserved_cost_micros), settled_at: iso(p.settled_at), released_at: iso(p.released_at) },
        recorded_after: p.revoked_at ? 'revocation' : p.expires_at && new Date(p.expires_at) <= now ? 'expiry' : null,
      };
      await withTransaction(db, async (c) => {
        await insertUsageReport(c, record);
        await appendEvents(c, [{
          projectId: auth.projectId, eventType: 'usage.recorded', source: 'permits', phase: 'usage', provider: p.provider, model: p.model,
          permitId, requestId: p.request_id, timestamp: now,
          metadata: {
            status: b.status, input_tokens: b.input_tokens, output_tokens: b.output_tokens, cost_usd_micros: cost,
            usage_idempotency_key: key, reported_by: 'caller',
            provider_request_id: b.verification?.provider_request_id ?? null, response_sha256: b.verification?.response_sha256 ?? null,
            ...(b.error ? { error_code: b.error.code } : {}),
          },
        }]);
      });
      return { body: record.response, replayed: false };
    });
  }

  async function usageRollup(projectId: string, permitId: string) {
    const p = await getPermit(projectId, permitId);
    const descendants = await listDescendantPermits(db, projectId, p.id);
    const all = [p, ...descendants];
    const reports = await listUsageReports(db, projectId, all.map((x) => x.id));
    const own = reports.find((r) => r.permit_id === p.id) ?? null;
    const sum = (f: (r: (typeof reports)[number]) => number) => reports.reduce((a, r) => a + f(r), 0);
    const estimated = p.estimated_cost_micros === null ? null : Number(p.estimated_cost_micros);
    return {
      object: 'permit_usage',
      permit_id: p.id,
      status: (await view(p)).status,
      estimate: { input_tokens: p.estimated_input_tokens, output_tokens: p.estimated_output_tokens, cost_usd_micros: estimated },
      reservation: { state: p.reservation_state, reserved_cost_usd_micros: Number(p.reserved_cost_micros), settled_at: iso(p.settled_at), released_at: iso(p.released_at) },
      report: own ? usageReportView(own) : null,
      variance_usd_micros: own && estimated !== null ? Number(own.billed_cost_micros) - estimated : null,
      lineage_totals: {
        permits: all.length,
        reports: reports.length,
        input_tokens: sum((r) => r.input_tokens),
        output_tokens: sum((r) => r.output_tokens),
        billed_cost_usd_micros: sum((r) => Number(r.billed_cost_micros)),
        permit_ids: all.map((x) => x.id),
      },
    };
  }

  // ---- attestation, revocation, evidence ----

  async function attest(auth: AuthContext, permitId: string, b: z.infer<typeof attestSchema>) {
    return withKeyLock(db, LOCK_PERMIT_USAGE, `attest:${permitId}`, async () => {
      const p = await getPermit(auth.projectId, permitId);
      if (p.decision !== 'review') throw errors.conflict('permit_not_reviewable', `Only a review permit can be attested; this one is ${p.decision}`, { permit_id: p.id, decision: p.decision });
      if (p.revoked_at) throw errors.conflict('permit_revoked', 'The permit was revoked', { permit_id: p.id, revoked_at: iso(p.revoked_at) });
      const prior = await findAttestation(db, auth.projectId, p.id);
      if (prior) throw errors.conflict('permit_already_attested', 'The permit was already attested', { permit_id: p.id, child_permit_id: prior.child_permit_id });
      const now = clock.now();
      if (p.expires_at && new Date(p.expires_at).getTime() <= now.getTime()) {
        throw errors.conflict('permit_expired', 'The review window of this permit has passed; request a new permit', { permit_id: p.id, expires_at: iso(p.expires_at) });
      }
      const attestedAt = b.attested_at ? new Date(b.attested_at) : now;
      if (attestedAt.getTime() > now.getTime() + 60_000 || attestedAt.getTime() < new Date(p.issued_at).getTime()) {
        throw errors.validation([{ path: 'attested_at', message: 'must lie between the permit issue time and now', code: 'custom' }]);
      }
      const meta = p.metadata ?? {};
      const req: GovernanceRequest = {
        projectId: p.project_id,
        requestId: p.request_id ?? newId('req'),
        route: p.route,
        operation: (p.operation ?? 'generate.text') as GovernanceRequest['operation'],
        provider: (p.provider ?? 'openai') as ProviderId,
        model: p.model ?? '',
        estimatedInputTokens: p.estimated_input_tokens,
        estimatedOutputTokens: p.estimated_output_tokens,
        estimatedCostMicros: p.estimated_cost_micros === null ? null : Number(p.estimated_cost_micros),
        workflowId: p.workflow_id,
        metadata: (meta.request_metadata as Record<string, string> | undefined) ?? {},
      };
      const childId = newId('permit');
      const ttl = b.ttl_seconds ?? DEFAULT_ALLOW_TTL_SECONDS;
      const attestation: AttestationRecord = {
        id: newId('att'),
        project_id: p.project_id,
        permit_id: p.id,
        child_permit_id: childId,
        attested_by: b.attested_by,
        attested_at: attestedAt,
        reason: b.reason,
        recorded_at: now,
        recorded_by: `api_key:${auth.keyId}`,
      };
      const child = await withTransaction(db, async (c) => {
        // Hold the governance lock: the re-check below and the reservation are one atomic step.
        await lockProjectGovernance(c, p.project_id);
        // Re-check everything but the review under today's policy and counters (a dry run reads
        // committed state on another connection; no decision can commit while we hold the lock).
        const check = await governance.evaluate(req, { persist: false });
        if (check.decision === 'deny' || check.decision === 'throttle') {
          throw errors.conflict('attestation_blocked', `The attestation cannot produce an allow: ${check.display_reason}`, {
            permit_id: p.id,
            decision: check.decision,
            reason_code: check.reason_code,
          });
        }
        const cost = req.estimatedCostMicros ?? 0;
        const periods = currentPeriods(now);
        const periodKeys = PERIOD_KINDS.map((k) => ({ kind: k, start: periods[k].start }));
        const expiresAt = new Date(now.getTime() + ttl * 1000);
        const reason = `Attested by ${b.attested_by}: ${b.reason}`;
        const policyVersion = check.metadata.policy_version ?? null;
        const inserted = await insertPermit(c, {
          id: childId,
          project_id: p.project_id,
          request_id: req.requestId,
          route: p.route,
          operation: p.operation,
          provider: p.provider,
          model: p.model,
          workflow_id: p.workflow_id,
          decision: 'allow',
          reason_code: 'policy.review_attested',
          display_reason: reason,
          decision_details: {
            decision: 'allow',
            code: 'policy.review_attested',
            reason,
            reason_detail: { category: 'policy', kind: 'attestation', outcome: 'allowed' },
            attested_permit_id: p.id,
            attested_by: b.attested_by,
            attestation_id: attestation.id,
            review_reason_code: p.reason_code,
            projected_cost_usd_micros: cost,
            policy_version: policyVersion,
          },
          actions: [{ type: 'proceed', message: 'The request may proceed (human review attested)' }],
          estimated_input_tokens: p.estimated_input_tokens,
          estimated_output_tokens: p.estimated_output_tokens,
          estimated_cost_micros: p.estimated_cost_micros,
          reservation_state: 'active',
          reservation_periods: periodKeys,
          reserved_cost_micros: cost,
          issued_at: now,
          expires_at: expiresAt,
          parent_permit_id: p.id,
          idempotency_key: null,
          metadata: {
            lineage_reason: 'attestation',
            attestation_id: attestation.id,
            requested_route: meta.requested_route ?? null,
            request_metadata: meta.request_metadata ?? {},
            decision_metadata: { evaluated_at: now.toISOString(), policy_version: policyVersion, attested: true },
          },
        });
        await addToSpend(c, p.project_id, periodKeys, { reserved: cost, requests: 1 });
        await insertAttestation(c, attestation);
        const base = { projectId: p.project_id, source: 'permits', phase: 'permit', provider: p.provider, model: p.model, requestId: req.requestId, timestamp: now };
        await appendEvents(c, [
          { ...base, eventType: 'permit.attested', permitId: p.id, metadata: { attested_by: b.attested_by, attested_at: attestedAt.toISOString(), reason: b.reason, child_permit_id: childId, recorded_by: attestation.recorded_by } },
          { ...base, eventType: 'permit.allowed', permitId: childId, metadata: { decision: 'allow', reason, reason_code: 'policy.review_attested', route: p.route, operation: p.operation, workflow_id: p.workflow_id, parent_permit_id: p.id, reserved_cost_usd_micros: cost } },
          { ...base, eventType: 'permit.expiry_scheduled', permitId: childId, metadata: { expires_at: expiresAt.toISOString() } },
        ]);
        return inserted;
      });
      return {
        object: 'permit_attestation',
        attestation: attestationView(attestation),
        permit: permitView((await findPermit(db, auth.projectId, p.id))!, now, { attestation }),
        allowed_permit: permitView(child, now, { attestation }),
      };
    });
  }

  async function revoke(auth: AuthContext, permitId: string, b: z.infer<typeof revokeSchema>) {
    const p = await getPermit(auth.projectId, permitId);
    if (p.revoked_at) {
      throw errors.conflict('permit_already_revoked', 'The permit was already revoked', { permit_id: p.id, revoked_at: iso(p.revoked_at), revoked_by: p.revoked_by });
    }
    const revoked = await governance.revoke(auth.projectId, permitId, { revokedBy: b.actor ?? `api_key:${auth.keyId}`, reason: b.reason });
    if (!revoked) {
      const again = await findPermit(db, auth.projectId, permitId);
      throw errors.conflict('permit_already_revoked', 'The permit was already revoked', { permit_id: permitId, revoked_at: iso(again?.revoked_at ?? null) });
    }
    return view(revoked);
  }

  async function addEvidence(auth: AuthContext, permitId: string, b: z.infer<typeof evidenceSchema>) {
    const p = await getPermit(auth.projectId, permitId);
    const now = clock.now();
    const rec = {
      id: newId('evd'),
      project_id: auth.projectId,
      permit_id: p.id,
      type: b.type,
      description: b.description ?? null,
      uri: b.uri ?? null,
      content_sha256: b.content_sha256 ?? null,
      data: b.data ?? null,
      submitted_by: b.submitted_by ?? `api_key:${auth.keyId}`,
      created_at: now,
    };
    await withTransaction(db, async (c) => {
      await insertEvidence(c, rec);
      await appendEvents(c, [{
        projectId: auth.projectId, eventType: 'permit.evidence_attached', source: 'permits', phase: 'evidence', provider: p.provider, model: p.model,
        permitId: p.id, requestId: p.request_id, timestamp: now,
        metadata: { evidence_id: rec.id, type: rec.type, content_sha256: rec.content_sha256, uri: rec.uri },
      }]);
    });
    return evidenceView(rec);
  }

  async function evidence(projectId: string, permitId: string) {
    const p = await getPermit(projectId, permitId);
    return { object: 'list', permit_id: p.id, data: (await listEvidence(db, projectId, p.id)).map(evidenceView) };
  }

  return { create, dryRun, getPermit, view, bundle, lineage, exportLines, recordUsage, usageRollup, attest, revoke, addEvidence, evidence, timelineEvents, loadAttestation };
}

export type PermitService = ReturnType<typeof createPermitService>;
export type { EventRecord };
