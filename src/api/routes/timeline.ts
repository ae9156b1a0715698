import { errors } from '../errors';
import { authOf } from '../middleware/auth';
import { routeFamily } from '../route-table';
import { permitTimelineSchema, requestTimelineSchema } from '../schemas/events';
import { permitsEvents, requestTimeline } from '../../db/repositories/log-events';
import { timelineEventView as eventView } from '../../events/view';
import { findPermit, listChildPermits, PermitRecord } from '../../db/repositories/permits';
import { notFoundOrArchived } from '../../retention/archived';
import { permitDecision } from '../../executions/lifecycle';

const distinct = (values: (string | null)[]) => [...new Set(values.filter((v): v is string => typeof v === 'string'))];

/** Route a permit's request went through (the request-bound endpoint). */
const ENDPOINTS: Record<string, string> = {
  executions: 'POST /v1/executions',
  execute: 'POST /v1/execute',
  permits: 'POST /v1/permits',
  jobs: 'POST /v1/jobs',
};
function endpointOf(route: string): string {
  if (Object.hasOwn(ENDPOINTS, route)) return ENDPOINTS[route];
  if (route.startsWith('proxy:')) return `POST /v1/proxy/${route.slice('proxy:'.length)}`;
  return route;
}

/**
 * Timelines are rebuilt only from persisted events, call records and permits (a record's events are
 * derived from its columns, src/executions/lifecycle-events.ts); nothing is synthesised.
 */
export const timelineRoutes = routeFamily(
  'Timelines',
  () => ({}),
  [
    {
      method: 'get',
      path: '/v1/requests/:request_id/timeline',
      stability: 'Beta',
      since: 'v1.3',
      auth: 'key',
      members: true,
      summary: 'Replayable timeline of a request',
      response: requestTimelineSchema,
      handler: async (ctx, { deps }) => {
        const auth = authOf(ctx);
        const requestId = ctx.params.request_id;
        const { events, permits } = await requestTimeline(deps.db, auth.projectId, requestId);
        if (events.length === 0 && permits.length === 0) throw await notFoundOrArchived(deps.db, auth.projectId, { what: 'Request', id: requestId });
        ctx.body = {
          project_id: auth.projectId,
          request_id: requestId,
          permit_ids: distinct([...permits.map((p) => p.id), ...events.map((e) => e.permit_id)]),
          job_ids: distinct(events.map((e) => e.job_id)),
          session_ids: distinct(events.map((e) => e.session_id)),
          events: events.map(eventView),
        };
      },
    },
    {
      method: 'get',
      path: '/v1/permits/:permit_id/timeline',
      stability: 'Beta',
      auth: 'key',
      members: true,
      summary: 'Timeline of a permit',
      response: permitTimelineSchema,
      handler: async (ctx, { deps }) => {
        const auth = authOf(ctx);
        const permit = await findPermit(deps.db, auth.projectId, ctx.params.permit_id);
        if (!permit) throw errors.notFound('Permit', ctx.params.permit_id);
        const [events, children] = await Promise.all([
          permitsEvents(deps.db, auth.projectId, [permit.id]),
          listChildPermits(deps.db, auth.projectId, permit.id),
        ]);
        const related = distinct([permit.parent_permit_id, ...children.map((c: PermitRecord) => c.id)]);
        ctx.body = {
          project_id: auth.projectId,
          permit_id: permit.id,
          request_id: permit.request_id,
          permit: {
            permit_id: permit.id,
            ...permitDecision(permit),
            reservation_state: permit.reservation_state,
            estimated_cost_usd_micros: permit.estimated_cost_micros,
            actual_cost_usd_micros: permit.actual_cost_micros,
          },
          endpoint: endpointOf(permit.route),
          issued_at: new Date(permit.issued_at).toISOString(),
          expires_at: permit.expires_at ? new Date(permit.expires_at).toISOString() : null,
          related_permit_ids: related,
          revocation: permit.revoked_at
            ? { revoked_at: new Date(permit.revoked_at).toISOString(), revoked_by: permit.revoked_by, reason: permit.revocation_reason }
            : null,
          permit_ids: distinct([permit.id, ...events.map((e) => e.permit_id)]),
          job_ids: distinct(events.map((e) => e.job_id)),
          session_ids: distinct(events.map((e) => e.session_id)),
          events: events.map(eventView),
        };
      },
    },
  ],
);
