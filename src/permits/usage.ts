/**
 * Usage closeout of a permit-first call: POST /v1/permits/{id}/usage (once per permit, idempotent
 * on usage_idempotency_key; settles or releases the reservation) and the lineage rollup GET.
 */
import canonicalize from 'canonicalize';
import { withTransaction } from '../db/pool';
import { ApiError, errors } from '../errors';
import { appendEvents } from '../db/repositories/events';
import { findPermit, listDescendantPermits } from '../db/repositories/permits';
import { findUsageReport, insertUsageReport, listUsageReports } from '../db/repositories/permit-usage-reports';
import { LOCK_PERMIT_USAGE, withKeyLock } from '../db/repositories/key-locks';
import type { AuthContext } from '../auth-context';
import type { UsageReport } from './schemas';
import { usageReportView } from './view';
import { iso, sha256, type PermitContext } from './context';

export function permitUsage(ctx: PermitContext) {
  const { db, clock, governance, getPermit, view } = ctx;

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
            details: { idempotency_key: key, usage_idempotency_key: key },
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
        reported_by: auth.actor,
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
  return { recordUsage, usageRollup };
}
