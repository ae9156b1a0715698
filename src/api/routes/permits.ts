import { Readable } from 'node:stream';
import type { ParameterizedContext } from 'koa';
import { errors, parseOrThrow } from '../errors';
import { authOf } from '../middleware/auth';
import { projectRead, projectWrite, routeFamily } from '../route-table';
import {
  permitAttestationResultSchema,
  permitBundleSchema,
  permitDryRunSchema,
  permitEvidenceListSchema,
  permitEvidenceSchema,
  permitLineageSchema,
  permitListSchema,
  permitSchema,
  permitUsageReportSchema,
  permitUsageRollupSchema,
} from '../schemas/permits';
import { attestSchema, evidenceSchema, exportQuerySchema, listQuerySchema, permitRequestSchema, revokeSchema, usageSchema } from '../../permits/schemas';
import { orArchived } from '../../retention/archived';

const body = (ctx: ParameterizedContext) => ctx.request.body ?? {};
const query = (ctx: ParameterizedContext) => ({ ...ctx.query }) as Record<string, unknown>;
/**
 * A replayed permit answer says so in `idempotent-replayed`, the name every other idempotent route
 * uses; `x-svc-idempotent-replay`, the name permits answered with first, is kept for existing
 * clients (docs/decisions/permit-idempotency.md).
 */
const setReplayed = (ctx: ParameterizedContext) => {
  ctx.set('idempotent-replayed', 'true');
  ctx.set('x-svc-idempotent-replay', 'true');
};

/**
 * The permit-first API: a decision only, the caller enforces it and closes the permit out with
 * its usage. Fixed paths (/export, /dry-run) come before /:permit_id so the parameter never
 * captures them. Design rules: docs/decisions/permit-first.md.
 */
export const permitRoutes = routeFamily(
  'Permits',
  (deps) => ({ svc: deps.permits, db: deps.db }),
  [
    {
      method: 'post',
      path: '/v1/permits',
      stability: 'GA',
      since: 'v1.0',
      auth: 'key',
      summary: 'Request a permit (any decision answers 200)',
      response: permitSchema,
      body: permitRequestSchema,
      handler: async (ctx, { svc }) => {
        const result = await svc.create(authOf(ctx), parseOrThrow(permitRequestSchema, body(ctx)));
        ctx.set('x-svc-permit-id', result.body.permit_id);
        if (result.replayed) setReplayed(ctx);
        if (result.revalidatedFrom) ctx.set('x-svc-revalidated-from', result.revalidatedFrom);
        // Every decision (allow, deny, review, throttle) is a 200 with the permit object.
        ctx.status = 200;
        ctx.body = result.body;
      },
    },
    {
      method: 'post',
      path: '/v1/permits/dry-run',
      stability: 'Beta',
      since: 'v1.2',
      auth: 'key',
      summary: 'Evaluate a permit request without recording it',
      response: permitDryRunSchema,
      body: permitRequestSchema,
      handler: projectWrite(permitRequestSchema, ({ svc }, auth, input) => svc.dryRun(auth, input)),
    },
    {
      method: 'get',
      path: '/v1/permits',
      stability: 'GA',
      since: 'v1.0',
      auth: 'key',
      members: true,
      summary: 'List permits',
      response: permitListSchema,
      query: listQuerySchema,
      handler: async (ctx, { svc }) => {
        ctx.body = await svc.listPage(authOf(ctx).projectId, parseOrThrow(listQuerySchema, query(ctx)));
      },
    },
    {
      method: 'get',
      path: '/v1/permits/export',
      stability: 'Beta',
      since: 'v1.3',
      auth: 'key',
      summary: 'Export permits as NDJSON',
      query: exportQuerySchema,
      contentType: 'application/x-ndjson',
      handler: (ctx, { svc, deps }) => {
        const auth = authOf(ctx);
        const q = parseOrThrow(exportQuerySchema, query(ctx));
        const from = new Date(q.from);
        const to = q.to ? new Date(q.to) : deps.clock.now();
        if (to.getTime() <= from.getTime()) throw errors.validation([{ path: 'to', message: 'must be later than from', code: 'custom' }]);
        ctx.status = 200;
        ctx.type = 'application/x-ndjson';
        ctx.set('content-disposition', `attachment; filename="permits-${auth.projectId}-${from.toISOString()}.ndjson"`);
        ctx.body = Readable.from(svc.exportLines(auth.projectId, { from, to }, q.include_events === 'true'));
      },
    },
    {
      method: 'get',
      path: '/v1/permits/:permit_id',
      stability: 'GA',
      since: 'v1.0',
      auth: 'key',
      members: true,
      summary: 'A permit',
      response: permitSchema,
      handler: async (ctx, { svc, db }) => {
        const projectId = authOf(ctx).projectId;
        ctx.body = await svc.view(await orArchived(db, projectId, { what: 'Permit', id: ctx.params.permit_id }, () => svc.getPermit(projectId, ctx.params.permit_id)));
      },
    },
    {
      method: 'get',
      path: '/v1/permits/:permit_id/bundle',
      stability: 'GA',
      since: 'v1.1',
      auth: 'key',
      summary: 'Permit with its evidence, usage and signatures',
      response: permitBundleSchema,
      handler: projectRead(({ svc }, projectId, { permit_id }) => svc.bundle(projectId, permit_id)),
    },
    {
      method: 'get',
      path: '/v1/permits/:permit_id/lineage',
      stability: 'GA',
      since: 'v1.1',
      auth: 'key',
      members: true,
      summary: 'Permits linked to this one',
      response: permitLineageSchema,
      handler: projectRead(({ svc }, projectId, { permit_id }) => svc.lineage(projectId, permit_id)),
    },
    {
      method: 'post',
      path: '/v1/permits/:permit_id/usage',
      stability: 'Beta',
      since: 'v1.3',
      auth: 'key',
      summary: 'Report usage against a permit',
      response: permitUsageReportSchema,
      body: usageSchema,
      handler: async (ctx, { svc }) => {
        const result = await svc.recordUsage(authOf(ctx), ctx.params.permit_id, parseOrThrow(usageSchema, body(ctx)));
        if (result.replayed) setReplayed(ctx);
        ctx.body = result.body;
      },
    },
    {
      method: 'get',
      path: '/v1/permits/:permit_id/usage',
      stability: 'Beta',
      since: 'v1.3',
      auth: 'key',
      summary: 'Usage reported against a permit',
      response: permitUsageRollupSchema,
      handler: projectRead(({ svc }, projectId, { permit_id }) => svc.usageRollup(projectId, permit_id)),
    },
    {
      method: 'post',
      path: '/v1/permits/:permit_id/attest',
      stability: 'Beta',
      auth: 'admin',
      members: true,
      summary: 'Attest a permit',
      response: permitAttestationResultSchema,
      body: attestSchema,
      status: 201,
      handler: async (ctx, { svc }) => {
        const result = await svc.attest(authOf(ctx), ctx.params.permit_id, parseOrThrow(attestSchema, body(ctx)));
        ctx.set('x-svc-permit-id', result.allowed_permit.permit_id);
        ctx.body = result;
      },
    },
    {
      method: 'post',
      path: '/v1/permits/:permit_id/revoke',
      stability: 'Beta',
      auth: 'admin',
      members: true,
      summary: 'Revoke a permit',
      response: permitSchema,
      body: revokeSchema,
      handler: projectWrite(revokeSchema, ({ svc }, auth, input, { permit_id }) => svc.revoke(auth, permit_id, input)),
    },
    {
      method: 'get',
      path: '/v1/permits/:permit_id/evidence',
      stability: 'Beta',
      auth: 'key',
      members: true,
      summary: 'Evidence attached to a permit',
      response: permitEvidenceListSchema,
      handler: projectRead(({ svc }, projectId, { permit_id }) => svc.evidence(projectId, permit_id)),
    },
    {
      method: 'post',
      path: '/v1/permits/:permit_id/evidence',
      stability: 'Beta',
      auth: 'key',
      summary: 'Attach evidence to a permit',
      response: permitEvidenceSchema,
      body: evidenceSchema,
      status: 201,
      handler: projectWrite(evidenceSchema, ({ svc }, auth, input, { permit_id }) => svc.addEvidence(auth, permit_id, input)),
    },
  ],
);
