import { z } from 'zod';
import { parseOrThrow } from '../errors';
import { routeFamily } from '../route-table';
import { managementAuthorizer, projectOf } from '../middleware/user-auth';
import { costForecast, promptAnalytics, usageCsv, usageReport } from '../../management/usage';
import { costForecastSchema, promptAnalyticsSchema, usageReportSchema } from '../schemas/usage';
import { permitListSchema } from '../schemas/permits';
import { listQuerySchema } from '../../permits/schemas';

export const usageQuerySchema = z
  .object({
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
  })
  .strict();

/** What a project's members read (management API, viewer role): its permits, usage over a window and the month-end forecast. */
export const managementReportRoutes = routeFamily(
  'Reports',
  (deps) => ({
    viewer: managementAuthorizer(deps, { role: 'viewer' }),
    permits: deps.permits,
  }),
  [
    {
      method: 'get',
      path: '/v1/projects/:project_id/permits',
      stability: 'Management',
      auth: 'native',
      summary: "The project's permits, newest first (the filters and cursor of GET /v1/permits)",
      query: listQuerySchema,
      response: permitListSchema,
      handler: async (ctx, { viewer, permits }) => {
        await viewer(ctx);
        ctx.body = await permits.listPage(projectOf(ctx).projectId, parseOrThrow(listQuerySchema, { ...ctx.query }, 'query'));
      },
    },
    {
      method: 'get',
      path: '/v1/projects/:project_id/usage',
      stability: 'Management',
      auth: 'native',
      summary: 'Settled usage by day, provider, model and API key over [from, to) (default: this month); CSV with Accept: text/csv',
      query: usageQuerySchema,
      response: usageReportSchema,
      handler: async (ctx, { deps, viewer }) => {
        await viewer(ctx);
        const q = parseOrThrow(usageQuerySchema, ctx.query, 'query');
        const report = await usageReport(deps.db, projectOf(ctx).projectId, { from: q.from ? new Date(q.from) : undefined, to: q.to ? new Date(q.to) : undefined }, deps.clock.now());
        if (ctx.accepts('application/json', 'text/csv') === 'text/csv') {
          ctx.type = 'text/csv; charset=utf-8';
          ctx.set('content-disposition', `attachment; filename="usage-${report.project_id}.csv"`);
          ctx.body = usageCsv(report);
          return;
        }
        ctx.body = report;
      },
    },
    {
      method: 'get',
      path: '/v1/projects/:project_id/cost-forecast',
      stability: 'Management',
      auth: 'native',
      summary: 'Month-end projection (linear run rate of the month so far, plus active intents) against the caps',
      response: costForecastSchema,
      handler: async (ctx, { deps, viewer }) => {
        await viewer(ctx);
        ctx.body = await costForecast(deps.db, projectOf(ctx).projectId, deps.clock.now());
      },
    },
    {
      method: 'get',
      path: '/v1/projects/:project_id/prompt-analytics',
      stability: 'Management',
      auth: 'native',
      summary: 'Prompt firewall inspections per model, blocks and monitor-mode flags per category and model over [from, to); never prompt text',
      query: usageQuerySchema,
      response: promptAnalyticsSchema,
      handler: async (ctx, { deps, viewer }) => {
        await viewer(ctx);
        const q = parseOrThrow(usageQuerySchema, ctx.query, 'query');
        ctx.body = await promptAnalytics(deps.db, projectOf(ctx).projectId, { from: q.from ? new Date(q.from) : undefined, to: q.to ? new Date(q.to) : undefined }, deps.clock.now());
      },
    },
  ],
);
