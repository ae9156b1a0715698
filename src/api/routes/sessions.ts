import type { ParameterizedContext } from 'koa';
import type { z } from 'zod';
import type { ApiDeps } from '../deps';
import { errors, parseOrThrow } from '../errors';
import { authOf, keyAuthOf } from '../middleware/auth';
import { searchEvidenceSchema as searchEvidenceResponseSchema, sessionDecisionSchema, sessionInterruptionSchema, sessionSchema } from '../schemas/sessions';
import { projectRead, routeFamily, type RouteContext, type RouteHandler } from '../route-table';
import { newId } from '../../ids';
import { timelineEventView } from '../../events/view';
import { appendEvent } from '../../db/repositories/events';
import { listSessionEventsAfter } from '../../db/repositories/session-events';
import { findSearchEvidence, insertSearchEvidence } from '../../db/repositories/session-search-evidence';
import { findSession, type SessionRecord } from '../../db/repositories/sessions';
import { sessionServiceDeps } from '../session-deps';
import { createSession, endSession, readSession, requireSession, sessionNotActive, type SessionServiceDeps } from '../../sessions/service';
import { applyOp, permitAction, takeTurn } from '../../sessions/turns';
import { sessionEvent } from '../../sessions/events';
import { searchEvidenceView } from '../../sessions/view';
import {
  actionPermitSchema,
  createSessionSchema,
  endSessionSchema,
  eventsQuerySchema,
  interruptionSchema,
  searchEvidenceSchema,
  turnSchema,
  type InterruptionBody,
} from '../../sessions/schemas';

const EVENT_POLL_MS = 250;
const HEARTBEAT_MS = 15_000;
const CLOSING_EVENTS = new Set(['session.ended', 'session.failed']);

const body = (ctx: ParameterizedContext) => ctx.request.body ?? {};

/** The body with `X-Svc-Workflow-Id` as its `workflow_id` when the body names none. */
function withWorkflowHeader(ctx: ParameterizedContext): unknown {
  const raw = body(ctx);
  const header = ctx.get('x-svc-workflow-id');
  if (!header || !raw || typeof raw !== 'object' || Array.isArray(raw) || (raw as Record<string, unknown>).workflow_id !== undefined) return raw;
  return { ...raw, workflow_id: header };
}

/** The session the route's path names, of the key's project (404 otherwise). */
const sessionOf = (ctx: RouteContext, svc: SessionServiceDeps) => requireSession(svc, authOf(ctx).projectId, ctx.params.session_id);

/** A decision asked of a live session (a turn, an action permit); a replayed one says so in `idempotent-replayed`. */
function sessionDecision<S extends z.ZodType>(
  schema: S,
  decide: (svc: SessionServiceDeps, s: SessionRecord, input: z.infer<S>) => Promise<{ replayed: boolean; body: unknown }>,
): RouteHandler<{ svc: SessionServiceDeps }> {
  return async (ctx, { svc }) => {
    const s = await sessionOf(ctx, svc);
    const result = await decide(svc, s, parseOrThrow(schema, withWorkflowHeader(ctx)));
    if (result.replayed) ctx.set('idempotent-replayed', 'true');
    ctx.body = result.body;
  };
}

/**
 * Realtime governance sessions (issue 19). The spec labels sessions an observed surface without a
 * tier: Beta here. Design: docs/decisions/sessions.md.
 */
export const sessionRoutes = routeFamily('Sessions', (deps) => ({ svc: sessionServiceDeps(deps) }), [
  {
    method: 'post', path: '/v1/sessions', stability: 'Beta', auth: 'key', status: 201, alsoStatus: [200], body: createSessionSchema,
    summary: 'Start a realtime governance session (201, or 200 on an idempotent repeat)',
    response: sessionSchema,
    handler: async (ctx, { svc }) => {
      const raw = body(ctx) as Record<string, unknown>;
      const headerKey = ctx.get('idempotency-key');
      const workflowHeader = ctx.get('x-svc-workflow-id');
      const parsed = parseOrThrow(createSessionSchema, {
        ...raw,
        ...(headerKey && raw.idempotency_key === undefined ? { idempotency_key: headerKey } : {}),
        ...(workflowHeader && raw.workflow_id === undefined ? { workflow_id: workflowHeader } : {}),
      });
      const result = await createSession(svc, keyAuthOf(ctx), parsed);
      ctx.status = result.status;
      ctx.body = result.body;
    },
  },
  {
    method: 'get', path: '/v1/sessions/:session_id', stability: 'Beta', auth: 'key', summary: 'A session with its live counters', response: sessionSchema,
    handler: projectRead(({ svc }, projectId, { session_id }) => readSession(svc, projectId, session_id)),
  },
  {
    method: 'post', path: '/v1/sessions/:session_id/turns', stability: 'Beta', auth: 'key', body: turnSchema,
    summary: 'Report a turn and get its decision (firewall, ceilings, budget); reported usage settles it',
    response: sessionDecisionSchema,
    handler: sessionDecision(turnSchema, takeTurn),
  },
  {
    method: 'post', path: '/v1/sessions/:session_id/action-permits', stability: 'Beta', auth: 'key', body: actionPermitSchema,
    summary: 'A permit for a tool action the agent wants to take',
    response: sessionDecisionSchema,
    handler: sessionDecision(actionPermitSchema, permitAction),
  },
  {
    method: 'post', path: '/v1/sessions/:session_id/interruption-events', stability: 'Beta', auth: 'key', status: 201, body: interruptionSchema,
    summary: 'Record a barge-in or cancellation',
    response: sessionInterruptionSchema,
    handler: async (ctx, { svc, deps }) => {
      ctx.body = await recordInterruption(svc, deps, await sessionOf(ctx, svc), parseOrThrow(interruptionSchema, body(ctx)));
    },
  },
  {
    method: 'get', path: '/v1/sessions/:session_id/events', stability: 'Beta', auth: 'key', query: eventsQuerySchema, contentType: 'text/event-stream',
    summary: "Server-Sent Events of the session's decisions and lifecycle (ends after session.ended or session.failed)",
    handler: async (ctx, { svc, deps }) => {
      const s = await sessionOf(ctx, svc);
      const q = parseOrThrow(eventsQuerySchema, { ...ctx.query }, 'query');
      const lastEventId = ctx.get('last-event-id');
      if (lastEventId && !/^\d{1,18}$/.test(lastEventId)) {
        throw errors.validation([{ path: 'headers.last-event-id', message: 'Last-Event-ID must be an id this stream sent', code: 'invalid_format' }]);
      }
      await streamSessionEvents(deps, ctx, { projectId: s.project_id, sessionId: s.id, after: lastEventId ? Number(lastEventId) : (q.after ?? 0) });
    },
  },
  {
    method: 'post', path: '/v1/sessions/:session_id/end', stability: 'Beta', auth: 'key', body: endSessionSchema, summary: 'End the session (or report it failed)', response: sessionSchema,
    handler: async (ctx, { svc }) => {
      ctx.body = await endSession(svc, authOf(ctx).projectId, ctx.params.session_id, parseOrThrow(endSessionSchema, body(ctx)));
    },
  },
  {
    method: 'post', path: '/v1/sessions/:session_id/search-evidence', stability: 'Beta', auth: 'key', status: 201, body: searchEvidenceSchema,
    summary: 'Attach search results (query, URLs, content hashes)',
    response: searchEvidenceResponseSchema,
    handler: async (ctx, { svc, deps }) => {
      const s = await sessionOf(ctx, svc);
      const b = parseOrThrow(searchEvidenceSchema, body(ctx));
      const at = deps.clock.now();
      const id = newId('srch');
      const record = await insertSearchEvidence(
        deps.db,
        { id, project_id: s.project_id, session_id: s.id, query: b.query, provider: b.provider ?? null, results: b.results, turn_id: b.turn_id ?? null, created_at: at },
        sessionEvent(s, 'session.search_evidence_attached', { search_id: id, result_count: b.results.length, turn_id: b.turn_id ?? null }, { at, phase: 'evidence' }),
      );
      ctx.body = searchEvidenceView(record);
    },
  },
  {
    method: 'get', path: '/v1/sessions/:session_id/search-evidence/:search_id', stability: 'Beta', auth: 'key', summary: 'Search evidence attached to the session', response: searchEvidenceResponseSchema,
    handler: async (ctx, { svc, deps }) => {
      const s = await sessionOf(ctx, svc);
      const record = await findSearchEvidence(deps.db, s.project_id, s.id, ctx.params.search_id);
      if (!record) throw errors.notFound('Search evidence', ctx.params.search_id);
      ctx.body = searchEvidenceView(record);
    },
  },
]);

/** A barge-in or cancellation: activity for the idle timer, and a session.interrupted event. */
async function recordInterruption(svc: SessionServiceDeps, deps: ApiDeps, s: SessionRecord, b: InterruptionBody) {
  if (s.status !== 'active') throw sessionNotActive(s.id, s.status);
  await applyOp(svc, s, { kind: 'touch' });
  const id = newId('sint');
  const at = deps.clock.now();
  const metadata = { interruption_id: id, type: b.type, turn_id: b.turn_id ?? null, audio_end_ms: b.audio_end_ms ?? null, reason: b.reason ?? null };
  await appendEvent(deps.db, sessionEvent(s, 'session.interrupted', metadata, { at }));
  return { id, object: 'session.interruption', session_id: s.id, ...metadata, recorded_at: at.toISOString() };
}

  /**
   * SSE: every event of the session after `after` (its `seq`, sent as the SSE id), then new ones as
   * they are written; the stream ends after session.ended or session.failed.
   */
async function streamSessionEvents(deps: ApiDeps, ctx: ParameterizedContext, session: { projectId: string; sessionId: string; after: number }): Promise<void> {
    const { projectId, sessionId, after } = session;
    const res = ctx.res;
    ctx.respond = false;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    let closed = false;
    res.on('close', () => (closed = true));
    res.write(`retry: 2000\n: tollgate session ${sessionId} events after ${after}\n\n`);
    let pos = after;
    let idleSince = Date.now();
    try {
      while (!closed) {
        const rows = await listSessionEventsAfter(deps.db, projectId, sessionId, pos);
        let done = false;
        for (const r of rows) {
          pos = Number(r.seq);
          res.write(`id: ${pos}\nevent: ${r.event_type}\ndata: ${JSON.stringify(timelineEventView(r))}\n\n`);
          if (CLOSING_EVENTS.has(r.event_type)) done = true;
        }
        if (done) break;
        if (rows.length > 0) {
          idleSince = Date.now();
          continue;
        }
        if (Date.now() - idleSince >= HEARTBEAT_MS) {
          res.write(': heartbeat\n\n');
          idleSince = Date.now();
          // A session closed before this stream started and whose closing event was already sent earlier.
          const now = await findSession(deps.db, projectId, sessionId);
          if (now && now.status !== 'active' && pos > after) break;
        }
        await new Promise((r) => setTimeout(r, EVENT_POLL_MS));
      }
    } catch (err) {
      deps.logger.warn({ err, session_id: sessionId }, 'session event stream failed; the client resumes with Last-Event-ID');
      if (!res.writableEnded) res.write(`event: error\ndata: ${JSON.stringify({ error: { code: 'internal_error', message: 'The stream failed; reconnect with Last-Event-ID' } })}\n\n`);
    } finally {
      if (!res.writableEnded && !res.destroyed) res.end();
    }
  }
