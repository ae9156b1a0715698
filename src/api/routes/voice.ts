import { parseOrThrow } from '../errors';
import { authOf } from '../middleware/auth';
import { voiceEventResultsSchema } from '../schemas/sessions';
import { routeFamily } from '../route-table';
import { findSession } from '../../db/repositories/sessions';
import { sessionServiceDeps } from '../session-deps';
import { requireSession } from '../../sessions/service';
import { handleRealtimeEvent, voiceEventsSchema } from '../../voice/realtime';

/** Voice events of a session (issue 19): OpenAI Realtime event names. Design: docs/decisions/voice-events.md. */
export const voiceRoutes = routeFamily('Sessions', (deps) => ({ svc: sessionServiceDeps(deps) }), [
  {
    method: 'post', path: '/v1/voice/sessions/:session_id/events', stability: 'Beta', auth: 'key', body: voiceEventsSchema,
    summary: 'Relay realtime provider events (one event, or {"events": [...]}, in order); transcripts are turns, response.done usage settles',
    response: voiceEventResultsSchema,
    handler: async (ctx, { svc }) => {
      const projectId = authOf(ctx).projectId;
      let s = await requireSession(svc, projectId, ctx.params.session_id);
      const parsed = parseOrThrow(voiceEventsSchema, ctx.request.body ?? {});
      const events = 'events' in parsed && Array.isArray(parsed.events) ? parsed.events : [parsed];
      const results = [];
      for (const ev of events) {
        results.push(await handleRealtimeEvent(svc, s, ev as never));
        s = (await findSession(svc.db, projectId, s.id)) ?? s;
      }
      ctx.body = { object: 'list', session_id: s.id, data: results };
    },
  },
]);
