/**
 * Plans change through the payment provider (docs/decisions/billing.md): a project's owner asks
 * for a Checkout Session; the provider's signed webhook events then set the plan. Events are
 * applied once per event id; a signature older than the tolerance is refused.
 */
import type { Config } from '../config';
import { withTransaction, type Db } from '../db/pool';
import { ApiError, errors } from '../errors';
import { recordBillingEvent } from '../db/repositories/billing-events';
import { findProjectPlan, PLANS, setProjectPlan, type Plan } from '../db/repositories/projects';
import type { Logger } from '../logger';
import { createCheckoutSession } from './stripe-client';
import { SignatureError, verifyStripeSignature } from './stripe-signature';

export interface BillingDeps {
  db: Db;
  config: Config;
  logger: Logger;
  now(): Date;
}

const notConfigured = (what: string) => new ApiError(501, 'billing_not_configured', `Billing is not configured on this deployment (${what})`);

export async function startCheckout(deps: BillingDeps, r: { projectId: string; plan: Plan; requestedBy: string }) {
  const stripe = deps.config.billing.stripe;
  if (!stripe.secretKey) throw notConfigured('STRIPE_SECRET_KEY');
  const current = await findProjectPlan(deps.db, r.projectId);
  if (current === r.plan) throw errors.conflict('plan_unchanged', `The project is already on the ${r.plan} plan`, { plan: r.plan });
  const priceId = stripe.prices[r.plan];
  if (!priceId) throw errors.validation([{ path: 'plan', message: `no price is configured for the ${r.plan} plan`, code: 'custom' }]);
  const session = await createCheckoutSession(
    { apiBase: stripe.apiBase, secretKey: stripe.secretKey },
    { projectId: r.projectId, plan: r.plan, priceId, successUrl: deps.config.billing.successUrl, cancelUrl: deps.config.billing.cancelUrl, requestedBy: r.requestedBy },
  );
  return { object: 'billing_checkout', project_id: r.projectId, plan: r.plan, checkout_session_id: session.id, url: session.url };
}

interface StripeEvent {
  id: string;
  type: string;
  data: { object: Record<string, unknown> };
}

const isPlan = (v: unknown): v is Plan => typeof v === 'string' && (PLANS as readonly string[]).includes(v);

/** The project and plan an event asks for; null when the event changes no plan. */
function planChangeOf(e: StripeEvent, prices: Partial<Record<Plan, string>>): { projectId: string | null; plan: Plan } | null {
  const o = e.data.object;
  const meta = (o.metadata ?? {}) as Record<string, unknown>;
  const projectId = typeof meta.project_id === 'string' ? meta.project_id : typeof o.client_reference_id === 'string' ? o.client_reference_id : null;
  if (e.type === 'checkout.session.completed') return isPlan(meta.plan) ? { projectId, plan: meta.plan } : null;
  if (e.type === 'customer.subscription.deleted') return { projectId, plan: 'starter' };
  if (e.type === 'customer.subscription.updated') {
    if (['canceled', 'unpaid', 'incomplete_expired'].includes(String(o.status))) return { projectId, plan: 'starter' };
    const items = (o.items as { data?: { price?: { id?: string } }[] } | undefined)?.data ?? [];
    const priceId = items[0]?.price?.id;
    const byPrice = (Object.entries(prices) as [Plan, string][]).find(([, id]) => id === priceId)?.[0];
    const plan = byPrice ?? (isPlan(meta.plan) ? meta.plan : null);
    return plan ? { projectId, plan } : null;
  }
  return null;
}

/** POST /v1/billing/stripe/webhook: verify, then apply once per event id. */
export async function handleStripeWebhook(deps: BillingDeps, raw: Buffer, signature: string | undefined) {
  const stripe = deps.config.billing.stripe;
  if (!stripe.webhookSecret) throw notConfigured('STRIPE_WEBHOOK_SECRET');
  try {
    verifyStripeSignature(raw, signature, { secret: stripe.webhookSecret, nowSeconds: Math.floor(deps.now().getTime() / 1000), toleranceSeconds: stripe.toleranceSeconds });
  } catch (err) {
    if (!(err instanceof SignatureError)) throw err;
    throw new ApiError(400, 'invalid_signature', 'The Stripe-Signature header does not verify for this payload', { details: { reason: err.reason } });
  }
  let event: StripeEvent;
  try {
    event = JSON.parse(raw.toString('utf8')) as StripeEvent;
  } catch {
    throw new ApiError(400, 'invalid_json', 'The event is not JSON');
  }
  if (typeof event?.id !== 'string' || typeof event.type !== 'string' || typeof event.data?.object !== 'object' || event.data.object === null) {
    throw errors.validation([{ path: '', message: 'not a payment provider event (id, type, data.object)', code: 'custom' }]);
  }
  const change = planChangeOf(event, stripe.prices);
  return withTransaction(deps.db, async (c) => {
    const target = change?.projectId ? await findProjectPlan(c, change.projectId) : null;
    const applies = change !== null && change.projectId !== null && target !== null;
    const first = await recordBillingEvent(c, { provider: 'stripe', eventId: event.id, type: event.type, projectId: change?.projectId ?? null, appliedPlan: applies ? change.plan : null });
    if (!first) return { received: true, event_id: event.id, duplicate: true, applied: false };
    if (applies) {
      await setProjectPlan(c, change.projectId!, change.plan);
      deps.logger.info({ event_id: event.id, event_type: event.type, project_id: change.projectId, plan: change.plan }, 'plan changed by the payment provider');
    } else if (change) {
      deps.logger.warn({ event_id: event.id, event_type: event.type }, 'payment provider event for an unknown project; acknowledged, not applied');
    }
    return { received: true, event_id: event.id, duplicate: false, applied: applies, ...(applies ? { project_id: change.projectId, plan: change.plan } : {}) };
  });
}
