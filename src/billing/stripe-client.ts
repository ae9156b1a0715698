/**
 * The payment provider adapter (Stripe's REST API, form-encoded): creates the Checkout Session a
 * plan change goes through. Only what Tollgate needs; no SDK in the product.
 */
import { ApiError } from '../errors';
import type { Plan } from '../db/repositories/projects';

export interface CheckoutRequest {
  projectId: string;
  plan: Plan;
  priceId: string;
  successUrl: string;
  cancelUrl: string;
  /** Who asked (stored in the session's metadata, shown back in its events). */
  requestedBy: string;
}

export async function createCheckoutSession(stripe: { apiBase: string; secretKey: string }, r: CheckoutRequest): Promise<{ id: string; url: string }> {
  const form = new URLSearchParams({
    mode: 'subscription',
    'line_items[0][price]': r.priceId,
    'line_items[0][quantity]': '1',
    client_reference_id: r.projectId,
    'metadata[project_id]': r.projectId,
    'metadata[plan]': r.plan,
    'metadata[requested_by]': r.requestedBy,
    'subscription_data[metadata][project_id]': r.projectId,
    'subscription_data[metadata][plan]': r.plan,
    success_url: r.successUrl,
    cancel_url: r.cancelUrl,
  });
  let res: Response;
  try {
    res = await fetch(`${stripe.apiBase}/v1/checkout/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stripe.secretKey}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
      signal: AbortSignal.timeout(15_000),
    });
  } catch {
    throw new ApiError(502, 'payment_provider_unavailable', 'The payment provider could not be reached; retry later');
  }
  const body = (await res.json().catch(() => null)) as { id?: string; url?: string; error?: { message?: string } } | null;
  if (!res.ok || !body?.id || !body.url) {
    throw new ApiError(502, 'payment_provider_error', 'The payment provider refused the checkout session', { details: { status: res.status, message: body?.error?.message ?? null } });
  }
  return { id: body.id, url: body.url };
}
