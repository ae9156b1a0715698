import Router from '@koa/router';
import { z } from 'zod';
import { ApiDeps } from '../deps';
import { parseOrThrow } from '../errors';
import { decodeCursor, encodeCursor } from '../cursor';
import { authenticate, authOf } from '../middleware/auth';
import { findAttempt } from '../../db/repositories/webhooks';
import { WEBHOOK_EVENT_TYPES } from '../../webhooks/events';
import {
  createSubscription,
  deliveryView,
  listDeliveries,
  listSubscriptionsPage,
  patchSubscription,
  readSubscription,
  removeSubscription,
  sendTestEvent,
  type WebhookServiceDeps,
} from '../../webhooks/service';

const eventTypes = z.array(z.enum(WEBHOOK_EVENT_TYPES)).min(1).max(WEBHOOK_EVENT_TYPES.length * 2);
export const createSchema = z
  .object({
    url: z.string().min(1).max(2048),
    event_types: eventTypes,
    description: z.string().max(500).nullable().optional(),
    enabled: z.boolean().optional(),
  })
  .strict();
export const patchSchema = z
  .object({
    url: z.string().min(1).max(2048).optional(),
    event_types: eventTypes.optional(),
    description: z.string().max(500).nullable().optional(),
    enabled: z.boolean().optional(),
  })
  .strict();
export const pageSchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict();

/** Webhook subscriptions: admin-scoped (a subscription receives the project's job results). */
export function registerWebhookRoutes(router: Router, deps: ApiDeps): void {
  const admin = authenticate(deps.keys, { scope: 'admin' });
  const svc: WebhookServiceDeps = {
    db: deps.db,
    clock: deps.clock,
    logger: deps.logger,
    config: deps.config,
    temporal: { client: deps.temporal.client, taskQueue: deps.temporal.taskQueue },
  };

  router.post('/v1/webhooks', admin, async (ctx) => {
    const body = parseOrThrow(createSchema, ctx.request.body ?? {});
    ctx.status = 201;
    ctx.body = await createSubscription(svc, authOf(ctx).projectId, body);
  });

  router.get('/v1/webhooks', admin, async (ctx) => {
    const q = parseOrThrow(pageSchema, ctx.query, 'query');
    const page = await listSubscriptionsPage(svc, authOf(ctx).projectId, { afterId: q.cursor ? decodeCursor(q.cursor, ['id']).id : undefined, limit: q.limit });
    ctx.body = { object: 'list', data: page.data, next_cursor: page.nextAfter ? encodeCursor({ id: page.nextAfter }) : null };
  });

  router.get('/v1/webhooks/:subscription_id', admin, async (ctx) => {
    ctx.body = await readSubscription(svc, authOf(ctx).projectId, ctx.params.subscription_id);
  });

  router.patch('/v1/webhooks/:subscription_id', admin, async (ctx) => {
    const body = parseOrThrow(patchSchema, ctx.request.body ?? {});
    ctx.body = await patchSubscription(svc, authOf(ctx).projectId, ctx.params.subscription_id, body);
  });

  router.delete('/v1/webhooks/:subscription_id', admin, async (ctx) => {
    await removeSubscription(svc, authOf(ctx).projectId, ctx.params.subscription_id);
    ctx.status = 204;
  });

  router.get('/v1/webhooks/:subscription_id/deliveries', admin, async (ctx) => {
    const q = parseOrThrow(pageSchema, ctx.query, 'query');
    const before = q.cursor ? decodeCursor(q.cursor, ['at', 'id']) : undefined;
    const page = await listDeliveries(svc, authOf(ctx).projectId, ctx.params.subscription_id, { before, limit: q.limit });
    ctx.body = { object: 'list', data: page.data, next_cursor: page.next ? encodeCursor(page.next) : null };
  });

  /** Sends a signed `webhook.test` event; answers with its first attempt once made (or 202 while it runs). */
  router.post('/v1/webhooks/:subscription_id/test', admin, async (ctx) => {
    const messageId = await sendTestEvent(svc, authOf(ctx).projectId, ctx.params.subscription_id);
    const deadline = Date.now() + deps.config.webhooks.timeoutMs + 5_000;
    let first = await findAttempt(deps.db, messageId, 1);
    while (!first && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      first = await findAttempt(deps.db, messageId, 1);
    }
    ctx.status = first ? 200 : 202;
    ctx.body = { object: 'webhook_test', webhook_id: messageId, event_type: 'webhook.test', delivery: first ? deliveryView(first) : null };
  });
}
