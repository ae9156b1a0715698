import { z } from 'zod';
import { parseOrThrow } from '../errors';
import { decodeCursor, encodeCursor, pageSchema } from '../cursor';
import { authOf } from '../middleware/auth';
import { projectRead, routeFamily } from '../route-table';
import {
  createdWebhookSubscriptionSchema,
  webhookDeliveryListSchema,
  webhookSubscriptionListSchema,
  webhookSubscriptionSchema,
  webhookTestSchema,
} from '../schemas/webhooks';
import { findAttempt } from '../../db/repositories/webhooks';
import { WEBHOOK_EVENT_TYPES } from '../../webhooks/events';
import { temporalServiceDeps } from '../deps';
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

/** Webhook subscriptions: admin-scoped (a subscription receives the project's job results). */
export const webhookRoutes = routeFamily(
  'Webhooks',
  (deps) => ({ svc: temporalServiceDeps(deps) satisfies WebhookServiceDeps }),
  [
    {
      method: 'post',
      path: '/v1/webhooks',
      stability: 'Beta',
      auth: 'admin',
      summary: 'Create a webhook subscription',
      response: createdWebhookSubscriptionSchema,
      body: createSchema,
      status: 201,
      handler: async (ctx, { svc }) => {
        const body = parseOrThrow(createSchema, ctx.request.body ?? {});
        ctx.body = await createSubscription(svc, authOf(ctx).projectId, body);
      },
    },
    {
      method: 'get',
      path: '/v1/webhooks',
      stability: 'Beta',
      auth: 'admin',
      members: true,
      summary: 'List webhook subscriptions',
      response: webhookSubscriptionListSchema,
      query: pageSchema,
      handler: async (ctx, { svc }) => {
        const q = parseOrThrow(pageSchema, ctx.query, 'query');
        const page = await listSubscriptionsPage(svc, authOf(ctx).projectId, { afterId: q.cursor ? decodeCursor(q.cursor, ['id']).id : undefined, limit: q.limit });
        ctx.body = { object: 'list', data: page.data, next_cursor: page.nextAfter ? encodeCursor({ id: page.nextAfter }) : null };
      },
    },
    {
      method: 'get',
      path: '/v1/webhooks/:subscription_id',
      stability: 'Beta',
      auth: 'admin',
      summary: 'A webhook subscription',
      response: webhookSubscriptionSchema,
      handler: projectRead(({ svc }, projectId, { subscription_id }) => readSubscription(svc, projectId, subscription_id)),
    },
    {
      method: 'patch',
      path: '/v1/webhooks/:subscription_id',
      stability: 'Beta',
      auth: 'admin',
      summary: 'Update a webhook subscription',
      response: webhookSubscriptionSchema,
      body: patchSchema,
      handler: async (ctx, { svc }) => {
        const body = parseOrThrow(patchSchema, ctx.request.body ?? {});
        ctx.body = await patchSubscription(svc, authOf(ctx).projectId, ctx.params.subscription_id, body);
      },
    },
    {
      method: 'delete',
      path: '/v1/webhooks/:subscription_id',
      stability: 'Beta',
      auth: 'admin',
      summary: 'Delete a webhook subscription',
      status: 204,
      handler: async (ctx, { svc }) => {
        await removeSubscription(svc, authOf(ctx).projectId, ctx.params.subscription_id);
      },
    },
    {
      method: 'get',
      path: '/v1/webhooks/:subscription_id/deliveries',
      stability: 'Beta',
      auth: 'admin',
      members: true,
      summary: 'Deliveries of a subscription',
      response: webhookDeliveryListSchema,
      query: pageSchema,
      handler: async (ctx, { svc }) => {
        const q = parseOrThrow(pageSchema, ctx.query, 'query');
        const before = q.cursor ? decodeCursor(q.cursor, ['at', 'id']) : undefined;
        const page = await listDeliveries(svc, authOf(ctx).projectId, ctx.params.subscription_id, { before, limit: q.limit });
        ctx.body = { object: 'list', data: page.data, next_cursor: page.next ? encodeCursor(page.next) : null };
      },
    },
    /** Sends a signed `webhook.test` event; answers with its first attempt once made (or 202 while it runs). */
    {
      method: 'post',
      path: '/v1/webhooks/:subscription_id/test',
      stability: 'Beta',
      auth: 'admin',
      summary: 'Send a test event (200 delivered, 202 queued)',
      response: webhookTestSchema,
      alsoStatus: [202],
      handler: async (ctx, { deps, svc }) => {
        const messageId = await sendTestEvent(svc, authOf(ctx).projectId, ctx.params.subscription_id);
        const deadline = Date.now() + deps.config.webhooks.timeoutMs + 5_000;
        let first = await findAttempt(deps.db, messageId, 1);
        while (!first && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 50));
          first = await findAttempt(deps.db, messageId, 1);
        }
        ctx.status = first ? 200 : 202;
        ctx.body = { object: 'webhook_test', webhook_id: messageId, event_type: 'webhook.test', delivery: first ? deliveryView(first) : null };
      },
    },
  ],
);
