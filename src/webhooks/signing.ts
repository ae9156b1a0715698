/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): the secret is `whsec_` +
 * base64 of 32 random bytes; `webhook-signature` is `v1,` + base64(HMAC-SHA256(secret bytes,
 * `${webhook-id}.${webhook-timestamp}.${body}`)). Receivers verify with any Standard Webhooks
 * library (the tests use the `standardwebhooks` npm package).
 */
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  return 'v1,' + createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
}

export function signedHeaders(secret: string, id: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': signWebhook(secret, id, timestampSeconds, body),
  };
}
