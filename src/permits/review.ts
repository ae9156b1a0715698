/**
 * Human review and revocation: POST /v1/permits/{id}/attest turns a review permit into an allowed
 * child permit (re-checked under the governance lock), POST /v1/permits/{id}/revoke.
 */
import { z } from 'zod';
import { withTransaction } from '../db/pool';
import { newId } from '../ids';
import { errors } from '../errors';
import { appendEvents } from '../db/repositories/events';
import { findPermit, insertPermit } from '../db/repositories/permits';
import { lockProjectGovernance } from '../db/repositories/policies';
import { addToSpend } from '../db/repositories/spend';
import { findAttestation, insertAttestation, AttestationRecord } from '../db/repositories/permit-attestations';
import { LOCK_PERMIT_USAGE, withKeyLock } from '../db/repositories/key-locks';
import { DEFAULT_ALLOW_TTL_SECONDS, GovernanceRequest } from '../governance';
import { currentPeriods, PERIOD_KINDS } from '../governance/periods';
import type { ProviderId } from '../providers/types';
import type { AuthContext } from '../auth-context';
import { attestSchema, revokeSchema } from './schemas';
import { attestationView, permitView } from './view';
import { iso, type PermitContext } from './context';

export function permitReview(ctx: PermitContext) {
  const { db, clock, governance, getPermit, view } = ctx;

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
        ...(Array.isArray(meta.tools) ? { tools: meta.tools as string[] } : {}),
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
        recorded_by: auth.actor,
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
            ...(Array.isArray(meta.tools) ? { tools: meta.tools } : {}),
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
    const revoked = await governance.revoke(auth.projectId, permitId, { revokedBy: b.actor ?? auth.actor, reason: b.reason });
    if (!revoked) {
      const again = await findPermit(db, auth.projectId, permitId);
      throw errors.conflict('permit_already_revoked', 'The permit was already revoked', { permit_id: permitId, revoked_at: iso(again?.revoked_at ?? null) });
    }
    return view(revoked);
  }
  return { attest, revoke };
}
