import type { Queryable } from './pool';

/** NOTIFY on a channel (payloads are limited to 8,000 bytes); listeners: src/db/notice-listener.ts. */
export async function notifyChannel(db: Queryable, channel: string, payload: string): Promise<void> {
  await db.query('SELECT pg_notify($1, $2)', [channel, payload]);
}
