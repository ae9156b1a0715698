import type { ParameterizedContext } from 'koa';
import { z } from 'zod';
import { errors, parseOrThrow } from '../errors';
import { authOf } from '../middleware/auth';
import { routeFamily } from '../route-table';
import { cursorPage } from '../cursor';
import { governanceEventListSchema, governanceEventSchema } from '../schemas/events';
import { chainedEventsAfter, findLogEvent, listLogEvents } from '../../db/repositories/log-events';
import { chainHead } from '../../db/repositories/integrity-log';
import { createEventFollower, type EventFollower } from '../../events/stream';
import { streamFrames } from '../../events/merge';
import { governanceEventView } from '../../events/view';

const LIST_LIMIT_DEFAULT = 50;
const LIST_LIMIT_MAX = 200;
/**
 * Events read (and written) per round; the next round waits until the socket drained. Heartbeat
 * and drain timeout: EVENT_STREAM_HEARTBEAT_MS, EVENT_STREAM_DRAIN_TIMEOUT_MS (src/config.ts).
 */
const STREAM_BATCH = 200;
/**
 * The first round's size: a stream resumed far back sends its first record after a few entries
 * are read and derived, not a full round; each round then grows fourfold up to STREAM_BATCH.
 */
const STREAM_FIRST_BATCH = 8;

const eventTypes = z
  .string()
  .min(1)
  .max(2000)
  .transform((s) => s.split(',').map((t) => t.trim()).filter(Boolean))
  .pipe(z.array(z.string().min(1).max(100)).min(1).max(50));

export const listSchema = z
  .object({
    event_type: eventTypes.optional(),
    since: z.iso.datetime({ offset: true }).optional(),
    until: z.iso.datetime({ offset: true }).optional(),
    request_id: z.string().min(1).max(200).optional(),
    permit_id: z.string().min(1).max(200).optional(),
    order: z.enum(['desc', 'asc']).default('desc'),
    limit: z.coerce.number().int().min(1).max(LIST_LIMIT_MAX).default(LIST_LIMIT_DEFAULT),
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict();

export const streamSchema = z
  .object({
    event_type: eventTypes.optional(),
    /** Start after this position (what Last-Event-ID carries); without either, the stream starts at the current head. */
    after: z.coerce.number().int().min(0).optional(),
  })
  .strict();

/** Opaque cursor: base64url of `{"v":1,"seq":<last seq>,"o":"asc"|"desc"}`. */
function encodeCursor(seq: number, order: string): string {
  return Buffer.from(JSON.stringify({ v: 1, seq, o: order })).toString('base64url');
}

function decodeCursor(cursor: string, order: string): number {
  try {
    const c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { v?: unknown; seq?: unknown; o?: unknown } | null;
    if (c?.v === 1 && Number.isSafeInteger(c.seq) && c.o === order) return c.seq as number;
  } catch {
    /* fall through */
  }
  throw errors.validation([{ path: 'cursor', message: 'Invalid cursor; pass next_cursor from a previous page unchanged, with the same order', code: 'invalid_cursor' }]);
}

function waitDrain(res: NodeJS.WritableStream & { writableNeedDrain?: boolean }, ms: number, signal: AbortSignal): Promise<boolean> {
  if (!res.writableNeedDrain) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (v: boolean) => {
      clearTimeout(t);
      res.off('drain', onDrain);
      signal.removeEventListener('abort', onAbort);
      resolve(v);
    };
    const onDrain = () => done(true);
    const onAbort = () => done(false);
    const t = setTimeout(() => done(false), ms);
    res.on('drain', onDrain);
    signal.addEventListener('abort', onAbort);
  });
}

export const governanceEventRoutes = routeFamily(
  'Governance events',
  (deps) => {
    let follower: EventFollower | null = null;
    const followerOf = () => {
      if (!follower) {
        follower = createEventFollower({ db: deps.db, logger: deps.logger });
        const f = follower;
        deps.onClose(async () => f.close());
      }
      return follower;
    };

    async function stream(ctx: ParameterizedContext, projectId: string, start: number, types: Set<string> | null): Promise<void> {
      const res = ctx.res;
      ctx.respond = false;
      ctx.status = 200;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      const abort = new AbortController();
      res.on('close', () => abort.abort());
      let pos = start;
      let batch = STREAM_FIRST_BATCH;
      res.write(`retry: 2000\n: tollgate governance events after position ${pos}\n\n`);
      try {
        while (!abort.signal.aborted) {
          const { events, to } = await chainedEventsAfter(deps.db, projectId, { afterPos: pos, limit: batch, signal: abort.signal });
          if (abort.signal.aborted) return;
          if (to !== null) {
            pos = to;
            batch = Math.min(STREAM_BATCH, batch * 4);
            for (const { event, id } of streamFrames(events, types)) {
              res.write(`${id === null ? '' : `id: ${id}\n`}data: ${JSON.stringify(governanceEventView(event))}\n\n`);
            }
            // Backpressure: read the next batch only once this one left the process.
            if (!(await waitDrain(res, deps.config.eventStream.drainTimeoutMs, abort.signal))) {
              if (!abort.signal.aborted) {
                deps.logger.info({ project_id: projectId, position: pos }, 'governance event stream consumer too slow; disconnected');
                res.destroy();
              }
              return;
            }
            continue;
          }
          const moved = await followerOf().waitBeyond(projectId, pos, deps.config.eventStream.heartbeatMs, abort.signal);
          if (!moved && !abort.signal.aborted) res.write(': heartbeat\n\n');
        }
      } catch (err) {
        deps.logger.warn({ err, project_id: projectId }, 'governance event stream failed; the client resumes with Last-Event-ID');
        if (!res.writableEnded) res.write(`event: error\ndata: ${JSON.stringify({ error: { code: 'internal_error', message: 'The stream failed; reconnect with Last-Event-ID' } })}\n\n`);
      } finally {
        if (!res.writableEnded && !res.destroyed) res.end();
      }
    }
    return { follower, followerOf, stream };
  },
  [
    {
      method: 'get',
      path: '/v1/governance/events',
      stability: 'GA',
      since: 'v1.0',
      auth: 'key',
      members: true,
      summary: 'List governance events',
      query: listSchema,
      response: governanceEventListSchema,
      handler: async (ctx, { deps }) => {
        const auth = authOf(ctx);
        const q = parseOrThrow(listSchema, ctx.query, 'query');
        const rows = await listLogEvents(deps.db, auth.projectId, {
          eventTypes: q.event_type,
          since: q.since ? new Date(q.since) : undefined,
          until: q.until ? new Date(q.until) : undefined,
          requestId: q.request_id,
          permitId: q.permit_id,
          order: q.order,
          afterSeq: q.cursor ? decodeCursor(q.cursor, q.order) : undefined,
          limit: q.limit + 1,
        });
        ctx.body = cursorPage(rows, q.limit, governanceEventView, (last) => encodeCursor(Number(last.seq), q.order));
      },
    },
    {
      method: 'get',
      path: '/v1/governance/events/stream',
      stability: 'Beta',
      since: 'v1.3',
      auth: 'key',
      members: true,
      summary: 'Governance events as Server-Sent Events',
      query: streamSchema,
      contentType: 'text/event-stream',
      handler: async (ctx, { deps, stream }) => {
        const auth = authOf(ctx);
        const q = parseOrThrow(streamSchema, ctx.query, 'query');
        const lastEventId = ctx.get('last-event-id').trim();
        let pos: number;
        if (lastEventId !== '') {
          if (!/^(0|[1-9][0-9]{0,15})$/.test(lastEventId)) {
            throw errors.validation([{ path: 'headers.last-event-id', message: 'Last-Event-ID must be a position this stream sent (a non-negative integer)', code: 'invalid_format' }]);
          }
          pos = Number(lastEventId);
        } else {
          pos = q.after ?? (await chainHead(deps.db, auth.projectId));
        }
        await stream(ctx, auth.projectId, pos, q.event_type ? new Set(q.event_type) : null);
      },
    },
    {
      method: 'get',
      path: '/v1/governance/events/:event_id',
      stability: 'GA',
      since: 'v1.0',
      auth: 'key',
      members: true,
      summary: 'A governance event',
      response: governanceEventSchema,
      handler: async (ctx, { deps }) => {
        const auth = authOf(ctx);
        const e = await findLogEvent(deps.db, auth.projectId, ctx.params.event_id);
        if (!e) throw errors.notFound('Governance event', ctx.params.event_id);
        ctx.body = governanceEventView(e);
      },
    },
  ],
);
