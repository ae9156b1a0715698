import { Readable } from 'node:stream';
import Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { ApiDeps } from '../deps';
import { errors, parseOrThrow } from '../errors';
import { authenticate, authOf } from '../middleware/auth';
import { decodeCursor, listPermits } from '../../db/repositories/permits';
import { createPermitService } from '../../permits/service';
import { attestSchema, evidenceSchema, exportQuerySchema, listQuerySchema, permitRequestSchema, revokeSchema, usageSchema } from '../../permits/schemas';

/**
 * The permit-first API: a decision only, the caller enforces it and closes the permit out with
 * its usage. Fixed paths (/export, /dry-run) are registered before /:permit_id so the parameter
 * never captures them. Design rules: docs/decisions.md "Permits and policies".
 */
export function registerPermitRoutes(router: Router, deps: ApiDeps): void {
  const anyKey = authenticate(deps.keys);
  const adminKey = authenticate(deps.keys, { scope: 'admin' });
  const svc = createPermitService({ db: deps.db, clock: deps.clock, governance: deps.governance });

  const body = (ctx: ParameterizedContext) => ctx.request.body ?? {};
  const query = (ctx: ParameterizedContext) => ({ ...ctx.query }) as Record<string, unknown>;

  router.post('/v1/permits', anyKey, async (ctx) => {
    const result = await svc.create(authOf(ctx), parseOrThrow(permitRequestSchema, body(ctx)));
    ctx.set('x-svc-permit-id', result.body.permit_id);
    if (result.replayed) ctx.set('x-svc-idempotent-replay', 'true');
    if (result.revalidatedFrom) ctx.set('x-svc-revalidated-from', result.revalidatedFrom);
    // Every decision (allow, deny, review, throttle) is a 200 with the permit object.
    ctx.status = 200;
    ctx.body = result.body;
  });

  router.post('/v1/permits/dry-run', anyKey, async (ctx) => {
    ctx.body = await svc.dryRun(authOf(ctx), parseOrThrow(permitRequestSchema, body(ctx)));
  });

  router.get('/v1/permits', anyKey, async (ctx) => {
    const auth = authOf(ctx);
    const q = parseOrThrow(listQuerySchema, query(ctx));
    if (q.cursor && !decodeCursor(q.cursor)) throw errors.validation([{ path: 'cursor', message: 'not a cursor returned by this list', code: 'custom' }]);
    const page = await listPermits(
      deps.db,
      auth.projectId,
      {
        decision: q.decision,
        reason_code: q.reason_code,
        workflow_id: q.workflow_id,
        provider: q.provider,
        model: q.model,
        reservation_state: q.reservation_state,
        issued_after: q.created_after ? new Date(q.created_after) : undefined,
        issued_before: q.created_before ? new Date(q.created_before) : undefined,
      },
      q.cursor ?? null,
      q.limit,
    );
    const data = await Promise.all(page.data.map((p) => svc.view(p)));
    ctx.body = { object: 'list', data, has_more: page.next_cursor !== null, next_cursor: page.next_cursor };
  });

  router.get('/v1/permits/export', anyKey, async (ctx) => {
    const auth = authOf(ctx);
    const q = parseOrThrow(exportQuerySchema, query(ctx));
    const from = new Date(q.from);
    const to = q.to ? new Date(q.to) : deps.clock.now();
    if (to.getTime() <= from.getTime()) throw errors.validation([{ path: 'to', message: 'must be later than from', code: 'custom' }]);
    ctx.status = 200;
    ctx.type = 'application/x-ndjson';
    ctx.set('content-disposition', `attachment; filename="permits-${auth.projectId}-${from.toISOString()}.ndjson"`);
    ctx.body = Readable.from(svc.exportLines(auth.projectId, { from, to }, q.include_events === 'true'));
  });

  router.get('/v1/permits/:permit_id', anyKey, async (ctx) => {
    const auth = authOf(ctx);
    ctx.body = await svc.view(await svc.getPermit(auth.projectId, ctx.params.permit_id));
  });

  router.get('/v1/permits/:permit_id/bundle', anyKey, async (ctx) => {
    ctx.body = await svc.bundle(authOf(ctx).projectId, ctx.params.permit_id);
  });

  router.get('/v1/permits/:permit_id/lineage', anyKey, async (ctx) => {
    ctx.body = await svc.lineage(authOf(ctx).projectId, ctx.params.permit_id);
  });

  router.post('/v1/permits/:permit_id/usage', anyKey, async (ctx) => {
    const result = await svc.recordUsage(authOf(ctx), ctx.params.permit_id, parseOrThrow(usageSchema, body(ctx)));
    if (result.replayed) ctx.set('x-svc-idempotent-replay', 'true');
    ctx.body = result.body;
  });

  router.get('/v1/permits/:permit_id/usage', anyKey, async (ctx) => {
    ctx.body = await svc.usageRollup(authOf(ctx).projectId, ctx.params.permit_id);
  });

  router.post('/v1/permits/:permit_id/attest', adminKey, async (ctx) => {
    const result = await svc.attest(authOf(ctx), ctx.params.permit_id, parseOrThrow(attestSchema, body(ctx)));
    ctx.set('x-svc-permit-id', result.allowed_permit.permit_id);
    ctx.status = 201;
    ctx.body = result;
  });

  router.post('/v1/permits/:permit_id/revoke', adminKey, async (ctx) => {
    ctx.body = await svc.revoke(authOf(ctx), ctx.params.permit_id, parseOrThrow(revokeSchema, body(ctx)));
  });

  router.get('/v1/permits/:permit_id/evidence', anyKey, async (ctx) => {
    ctx.body = await svc.evidence(authOf(ctx).projectId, ctx.params.permit_id);
  });

  router.post('/v1/permits/:permit_id/evidence', anyKey, async (ctx) => {
    ctx.status = 201;
    ctx.body = await svc.addEvidence(authOf(ctx), ctx.params.permit_id, parseOrThrow(evidenceSchema, body(ctx)));
  });
}
