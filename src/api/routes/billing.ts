import { z } from 'zod';
import { ApiError, errors, parseOrThrow } from '../errors';
import { routeFamily } from '../route-table';
import { actorOf, managementAuthorizer, principalOf } from '../middleware/user-auth';
import { PLANS } from '../../db/repositories/projects';
import { handleStripeWebhook, startCheckout } from '../../billing/service';
import { billingCheckoutSchema, billingWebhookResultSchema } from '../schemas/usage';

export const checkoutSchema = z.object({ project_id: z.string().min(1).max(100), plan: z.enum(PLANS as unknown as [string, ...string[]]) }).strict();

const WEBHOOK_BODY_LIMIT = 1 << 20;

/** Plans change through the payment provider (docs/decisions/billing.md). */
export const billingRoutes = routeFamily(
  'Billing',
  (deps) => ({
    owner: managementAuthorizer(deps, { role: 'owner' }),
    billing: { db: deps.db, config: deps.config, logger: deps.logger, now: () => deps.clock.now() },
  }),
  [
    {
      method: 'post',
      path: '/v1/billing/checkout',
      stability: 'Management',
      auth: 'native',
      summary: "A Checkout Session of the payment provider for a project's plan change (owner); answers its URL",
      body: checkoutSchema,
      response: billingCheckoutSchema,
      handler: async (ctx, { owner, billing }) => {
        const body = parseOrThrow(checkoutSchema, ctx.request.body ?? {});
        // The role is checked against the project named in the body.
        ctx.params.project_id = body.project_id;
        await owner(ctx);
        ctx.body = await startCheckout(billing, { projectId: body.project_id, plan: body.plan as (typeof PLANS)[number], requestedBy: actorOf(principalOf(ctx)) });
      },
    },
    {
      method: 'post',
      path: '/v1/billing/:payment_provider/webhook',
      stability: 'Management',
      auth: 'public',
      summary: 'Signed events of the payment provider (Stripe-Signature); applied once per event id',
      response: billingWebhookResultSchema,
      handler: async (ctx, { billing }) => {
        if (ctx.params.payment_provider !== 'stripe') throw errors.notFound('Payment provider', ctx.params.payment_provider);
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const c of ctx.req) {
          size += (c as Buffer).length;
          if (size > WEBHOOK_BODY_LIMIT) throw new ApiError(413, 'payload_too_large', `The request body exceeds ${WEBHOOK_BODY_LIMIT} bytes`);
          chunks.push(c as Buffer);
        }
        ctx.body = await handleStripeWebhook(billing, Buffer.concat(chunks), ctx.get('stripe-signature') || undefined);
      },
    },
  ],
);
