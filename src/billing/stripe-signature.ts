/**
 * Verification of the payment provider's webhook signature (Stripe's scheme): the header
 * `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]`, each v1 an HMAC-SHA256 of
 * `${t}.${raw body}` with the endpoint's secret; accepted when one v1 matches (constant-time) and
 * t is within the tolerance of now, which refuses a captured request replayed later.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export class SignatureError extends Error {
  constructor(readonly reason: 'missing' | 'malformed' | 'mismatch' | 'too_old') {
    super(`webhook signature ${reason}`);
  }
}

export function verifyStripeSignature(raw: Buffer, header: string | undefined, check: { secret: string; nowSeconds: number; toleranceSeconds: number }): void {
  const { secret, nowSeconds, toleranceSeconds } = check;
  if (!header) throw new SignatureError('missing');
  let t: number | null = null;
  const v1: Buffer[] = [];
  for (const part of header.split(',')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    const k = part.slice(0, i).trim();
    const v = part.slice(i + 1).trim();
    if (k === 't' && /^\d{1,12}$/.test(v)) t = Number(v);
    if (k === 'v1' && /^[0-9a-f]{64}$/i.test(v)) v1.push(Buffer.from(v, 'hex'));
  }
  if (t === null || v1.length === 0) throw new SignatureError('malformed');
  const expected = createHmac('sha256', secret).update(`${t}.`).update(raw).digest();
  if (!v1.some((s) => s.length === expected.length && timingSafeEqual(s, expected))) throw new SignatureError('mismatch');
  if (Math.abs(nowSeconds - t) > toleranceSeconds) throw new SignatureError('too_old');
}
