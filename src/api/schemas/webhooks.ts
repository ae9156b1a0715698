import { z } from 'zod';

/** Webhook subscriptions and their deliveries (docs/decisions/webhooks.md). */

export const webhookSubscriptionSchema = z
  .looseObject({
    id: z.string(),
    object: z.literal('webhook_subscription'),
    url: z.string(),
    description: z.string().nullable(),
    event_types: z.array(z.string()),
    enabled: z.boolean(),
    disabled_reason: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'WebhookSubscription' });

/** Creation is the only answer that carries the signing secret (`whsec_…`); it is never shown again. */
export const createdWebhookSubscriptionSchema = webhookSubscriptionSchema.extend({ secret: z.string() }).meta({ id: 'CreatedWebhookSubscription' });

export const webhookSubscriptionListSchema = z
  .looseObject({ object: z.literal('list'), data: z.array(webhookSubscriptionSchema), next_cursor: z.string().nullable() })
  .meta({ id: 'WebhookSubscriptionList' });

export const webhookDeliverySchema = z
  .looseObject({
    id: z.string(),
    object: z.literal('webhook_delivery'),
    webhook_id: z.string(),
    event_type: z.string().nullable(),
    attempt: z.number().int(),
    attempted_at: z.string(),
    status_code: z.number().int().nullable(),
    latency_ms: z.number().int().nullable(),
    succeeded: z.boolean(),
    error: z.string().nullable(),
    response_body: z.string().nullable(),
  })
  .meta({ id: 'WebhookDelivery' });

export const webhookDeliveryListSchema = z
  .looseObject({ object: z.literal('list'), data: z.array(webhookDeliverySchema), next_cursor: z.string().nullable() })
  .meta({ id: 'WebhookDeliveryList' });

export const webhookTestSchema = z
  .looseObject({ object: z.literal('webhook_test'), webhook_id: z.string(), event_type: z.literal('webhook.test'), delivery: z.union([webhookDeliverySchema, z.null()]) })
  .meta({ id: 'WebhookTest' });
