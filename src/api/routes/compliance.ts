import { Readable } from 'node:stream';
import { z } from 'zod';
import { ApiError, errors, parseOrThrow } from '../errors';
import { cursorPage, decodeCursor, encodeCursor } from '../cursor';
import { authOf, keyAuthOf } from '../middleware/auth';
import { complianceExportListSchema, complianceExportSchema } from '../schemas/integrity';
import { routeFamily, type RouteContext } from '../route-table';
import type { ApiDeps } from '../deps';
import type { AuthContext } from '../../auth-context';
import { EXPORT_PARTS, findExport, listExports } from '../../db/repositories/compliance-exports';
import { exportBundle } from '../../compliance/build';
import { createComplianceExport, exportView } from '../../compliance/service';

const LIST_LIMIT_DEFAULT = 20;
const LIST_LIMIT_MAX = 100;
/** Longest window one export covers. */
const MAX_WINDOW_DAYS = 366;

export const createSchema = z
  .object({
    window: z.object({ since: z.iso.datetime({ offset: true }), until: z.iso.datetime({ offset: true }) }).strict(),
    include: z.array(z.enum(EXPORT_PARTS)).min(1).max(EXPORT_PARTS.length).default([...EXPORT_PARTS]),
  })
  .strict()
  .refine((b) => Date.parse(b.window.since) < Date.parse(b.window.until), { message: 'window.since must be before window.until', path: ['window', 'until'] })
  .refine((b) => Date.parse(b.window.until) - Date.parse(b.window.since) <= MAX_WINDOW_DAYS * 86_400_000, { message: `a window covers at most ${MAX_WINDOW_DAYS} days`, path: ['window'] });

export const listSchema = z
  .object({
    status: z.enum(['queued', 'running', 'completed', 'failed']).optional(),
    limit: z.coerce.number().int().min(1).max(LIST_LIMIT_MAX).default(LIST_LIMIT_DEFAULT),
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict();

/** Compliance exports require the Production or Enterprise plan (403 plan.upgrade_required). */
function requireExportPlan(auth: AuthContext): void {
  if (auth.plan === 'starter') {
    throw new ApiError(403, 'plan.upgrade_required', 'Compliance exports require the Production or Enterprise plan', {
      details: { current_plan: auth.plan, required_plans: ['production', 'enterprise'] },
    });
  }
}

/** The export the route's path names, of the key's project (404 otherwise; 403 on the Starter plan). */
async function exportOf(ctx: RouteContext, db: ApiDeps['db']) {
  requireExportPlan(authOf(ctx));
  const row = await findExport(db, authOf(ctx).projectId, ctx.params.export_id);
  if (!row) throw errors.notFound('Compliance export', ctx.params.export_id);
  return row;
}

/** Compliance exports (admin key; docs/decisions/compliance-exports.md). */
export const complianceRoutes = routeFamily(
  'Compliance',
  (deps) => {
    const svc = {
      db: deps.db,
      logger: deps.logger,
      temporal: { client: deps.temporal.client, taskQueue: deps.temporal.taskQueue },
      heartbeatTimeoutMs: deps.config.complianceExports.heartbeatTimeoutMs,
    };
    return { svc };
  },
  [
    {
      method: 'post',
      path: '/v1/compliance/exports',
      stability: 'GA',
      since: 'v1.1',
      auth: 'admin',
      summary: 'Start a compliance export',
      response: complianceExportSchema,
      body: createSchema,
      status: 202,
      handler: async (ctx, { svc }) => {
        requireExportPlan(authOf(ctx));
        const auth = keyAuthOf(ctx);
        const body = parseOrThrow(createSchema, ctx.request.body ?? {});
        const row = await createComplianceExport(svc, {
          projectId: auth.projectId,
          since: new Date(body.window.since),
          until: new Date(body.window.until),
          include: [...new Set(body.include)],
          requestedBy: auth.keyId,
        });
        ctx.set('location', `/v1/compliance/exports/${row.id}`);
        ctx.body = exportView(row);
      },
    },
    {
      method: 'get',
      path: '/v1/compliance/exports',
      stability: 'GA',
      since: 'v1.1',
      auth: 'admin',
      summary: 'List compliance exports',
      response: complianceExportListSchema,
      query: listSchema,
      handler: async (ctx, { deps }) => {
        requireExportPlan(authOf(ctx));
        const auth = authOf(ctx);
        const q = parseOrThrow(listSchema, ctx.query, 'query');
        const rows = await listExports(deps.db, auth.projectId, { status: q.status, beforeId: q.cursor ? decodeCursor(q.cursor, ['id'], (c) => c.id.startsWith('cexp_')).id : undefined, limit: q.limit + 1 });
        ctx.body = cursorPage(rows, q.limit, exportView, (last) => encodeCursor({ id: last.id }));
      },
    },
    {
      method: 'get',
      path: '/v1/compliance/exports/:export_id',
      stability: 'GA',
      since: 'v1.1',
      auth: 'admin',
      summary: 'A compliance export',
      response: complianceExportSchema,
      handler: async (ctx, { deps }) => {
        ctx.body = exportView(await exportOf(ctx, deps.db));
      },
    },
    // The finished bundle: a tar of manifest.note, checkpoint.note and the NDJSON files.
    {
      method: 'get',
      path: '/v1/compliance/exports/:export_id/download',
      stability: 'Beta',
      auth: 'admin',
      summary: 'Download an export bundle',
      contentType: 'application/x-tar',
      handler: async (ctx, { deps }) => {
        const row = await exportOf(ctx, deps.db);
        if (row.status !== 'completed') throw errors.conflict('export_not_ready', `The export is ${row.status}; download it once it is completed`, { status: row.status });
        // Streamed from the archive store a piece at a time: a bundle is never whole in the process's memory.
        const bundle = await exportBundle(deps, row.id);
        ctx.set('content-type', 'application/x-tar');
        ctx.set('content-disposition', `attachment; filename="${row.id}.tar"`);
        ctx.set('x-content-sha256', row.bundle_sha256 ?? '');
        ctx.body = Readable.from(bundle.pieces);
        ctx.length = bundle.bytes;
      },
    },
  ],
);
