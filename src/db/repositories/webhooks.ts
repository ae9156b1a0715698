/**
 * Webhook subscriptions, messages (one per subscription and source event: the webhook-id and the
 * body), delivery attempts, and the fan-out's per-project cursor (migration 0111).
 */
import type { Db, Queryable } from '../pool';
import { withTransaction } from '../pool';
import { appendEvents } from './events';
import type { EventRecord, NewEvent } from '../../events/types';
import { chainedEventsAfter } from './log-events';

export interface WebhookSubscriptionRecord {
  id: string;
  project_id: string;
  url: string;
  description: string | null;
  event_types: string[];
  enabled: boolean;
  secret_encrypted: string;
  disabled_reason: string | null;
  deleted_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface WebhookMessageRecord {
  id: string;
  project_id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  request_id: string | null;
  job_id: string | null;
  permit_id: string | null;
  payload: Record<string, unknown>;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  created_at: Date;
  completed_at: Date | null;
}

export interface WebhookAttemptRecord {
  id: string;
  message_id: string;
  subscription_id: string;
  project_id: string;
  attempt: number;
  attempted_at: Date;
  status_code: number | null;
  latency_ms: number;
  ok: boolean;
  error: string | null;
  response_body: string | null;
  event_type?: string;
}

export async function insertSubscription(
  db: Queryable,
  s: { id: string; projectId: string; url: string; description: string | null; eventTypes: string[]; enabled: boolean; secretEncrypted: string },
): Promise<WebhookSubscriptionRecord> {
  const { rows } = await db.query<WebhookSubscriptionRecord>(
    `INSERT INTO webhook_subscriptions (id, project_id, url, description, event_types, enabled, secret_encrypted)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [s.id, s.projectId, s.url, s.description, s.eventTypes, s.enabled, s.secretEncrypted],
  );
  return rows[0];
}

export async function findSubscription(db: Queryable, projectId: string, id: string): Promise<WebhookSubscriptionRecord | null> {
  const { rows } = await db.query<WebhookSubscriptionRecord>('SELECT * FROM webhook_subscriptions WHERE project_id = $1 AND id = $2 AND deleted_at IS NULL', [projectId, id]);
  return rows[0] ?? null;
}

export async function findSubscriptionById(db: Queryable, id: string): Promise<WebhookSubscriptionRecord | null> {
  const { rows } = await db.query<WebhookSubscriptionRecord>('SELECT * FROM webhook_subscriptions WHERE id = $1', [id]);
  return rows[0] ?? null;
}

export async function listSubscriptions(db: Queryable, projectId: string, q: { afterId?: string; limit: number }): Promise<WebhookSubscriptionRecord[]> {
  const { rows } = await db.query<WebhookSubscriptionRecord>(
    `SELECT * FROM webhook_subscriptions WHERE project_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR id > $2) ORDER BY id LIMIT $3`,
    [projectId, q.afterId ?? null, q.limit],
  );
  return rows;
}

export async function updateSubscription(
  db: Queryable,
  projectId: string,
  id: string,
  patch: { url?: string; description?: string | null; eventTypes?: string[]; enabled?: boolean },
): Promise<WebhookSubscriptionRecord | null> {
  const { rows } = await db.query<WebhookSubscriptionRecord>(
    `UPDATE webhook_subscriptions
        SET url = COALESCE($3, url),
            description = CASE WHEN $4::boolean THEN $5 ELSE description END,
            event_types = COALESCE($6, event_types),
            enabled = COALESCE($7, enabled),
            disabled_reason = CASE WHEN $7::boolean IS TRUE THEN NULL WHEN $7::boolean IS FALSE THEN 'disabled_by_user' ELSE disabled_reason END,
            updated_at = now()
      WHERE project_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING *`,
    [projectId, id, patch.url ?? null, patch.description !== undefined, patch.description ?? null, patch.eventTypes ?? null, patch.enabled ?? null],
  );
  return rows[0] ?? null;
}

export async function deleteSubscription(db: Queryable, projectId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(
    'UPDATE webhook_subscriptions SET deleted_at = now(), enabled = false, updated_at = now() WHERE project_id = $1 AND id = $2 AND deleted_at IS NULL',
    [projectId, id],
  );
  return (rowCount ?? 0) > 0;
}

/** 410 Gone from the receiver: the subscription is disabled (re-enable with PATCH). */
export async function disableSubscription(db: Queryable, id: string, reason: string): Promise<void> {
  await db.query('UPDATE webhook_subscriptions SET enabled = false, disabled_reason = $2, updated_at = now() WHERE id = $1', [id, reason]);
}

/** Projects with at least one enabled subscription (what the fan-out scans). */
export async function projectsWithSubscriptions(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ project_id: string }>('SELECT DISTINCT project_id FROM webhook_subscriptions WHERE enabled AND deleted_at IS NULL');
  return rows.map((r) => r.project_id);
}

export async function enabledSubscriptions(db: Queryable, projectId: string): Promise<WebhookSubscriptionRecord[]> {
  const { rows } = await db.query<WebhookSubscriptionRecord>('SELECT * FROM webhook_subscriptions WHERE project_id = $1 AND enabled AND deleted_at IS NULL', [projectId]);
  return rows;
}

/**
 * The chain's order (chain_pos per project in `event_chain`, migration 0103; assigned in commit
 * order by the sequencer, unlike seq) is the order the fan-out follows. A chain row holds a stored
 * event or a call record, whose events are derived from it (src/db/repositories/log-events.ts).
 */
const SUBS_START = '(SELECT min(created_at) FROM webhook_subscriptions WHERE project_id = $1)';
const CHAIN = {
  // A stored event by its timestamp, a record by its completion (the last of its events).
  start: `SELECT COALESCE(max(c.chain_pos), 0) AS chain_pos
            FROM event_chain c LEFT JOIN events e ON e.seq = c.seq LEFT JOIN calls x ON e.seq IS NULL AND x.project_id = c.project_id AND x.seq = c.seq
           WHERE c.project_id = $1 AND coalesce(e.timestamp, x.completed_at) < ${SUBS_START}`,
  head: 'SELECT max(chain_pos) AS pos FROM (SELECT chain_pos FROM event_chain WHERE project_id = $1 AND chain_pos > $2 ORDER BY chain_pos LIMIT $3) s',
};

/** Lock class of a project's fan-out (pg_try_advisory_xact_lock(class, hashtext(project))). */
export const WEBHOOK_FANOUT_LOCK_CLASS = 7_501;

/**
 * One fan-out step of a project, in a transaction holding its try-lock: reads chained events after
 * the cursor (at most `batch` chain positions) and hands those of `types` to `plan`, which inserts
 * their messages (committed with this transaction). Returns how far it read (`to`, for
 * `advanceWebhookCursor` once the deliveries are started) or null when another process holds the
 * project.
 */
export async function fanOutProjectEvents(
  db: Db,
  projectId: string,
  read: { types: string[]; batch: number },
  plan: (c: Queryable, events: EventRecord[]) => Promise<void>,
): Promise<{ from: number; to: number } | null> {
  const { types, batch } = read;
  return withTransaction(db, async (c) => {
    const { rows: lock } = await c.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS ok', [WEBHOOK_FANOUT_LOCK_CLASS, projectId]);
    if (!lock[0].ok) return null;
    let { rows: cur } = await c.query<{ chain_pos: number }>('SELECT chain_pos FROM webhook_cursors WHERE project_id = $1', [projectId]);
    if (!cur[0]) {
      // First scan of the project: start after the events from before its first subscription.
      const { rows: start } = await c.query<{ chain_pos: number }>(CHAIN.start, [projectId]);
      await c.query('INSERT INTO webhook_cursors (project_id, chain_pos) VALUES ($1, $2) ON CONFLICT DO NOTHING', [projectId, start[0].chain_pos]);
      cur = start;
    }
    const from = Number(cur[0].chain_pos);
    const { rows: head } = await c.query<{ pos: number | null }>(CHAIN.head, [projectId, from, batch]);
    const to = head[0].pos === null ? null : Number(head[0].pos);
    if (to === null) return { from, to: from };
    const { events } = await chainedEventsAfter(c, projectId, { afterPos: from, toPos: to, types });
    if (events.length > 0) await plan(c, events);
    return { from, to };
  });
}

/** Moves a project's fan-out cursor forward (never back: two processes may have read the same range). */
export async function advanceWebhookCursor(db: Queryable, projectId: string, to: number): Promise<void> {
  await db.query('UPDATE webhook_cursors SET chain_pos = GREATEST(chain_pos, $2) WHERE project_id = $1', [projectId, to]);
}

export async function insertMessage(
  db: Queryable,
  m: { id: string; projectId: string; subscriptionId: string; eventId: string; eventType: string; requestId: string | null; jobId: string | null; permitId: string | null; payload: Record<string, unknown> },
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_messages (id, project_id, subscription_id, event_id, event_type, request_id, job_id, permit_id, payload)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
    [m.id, m.projectId, m.subscriptionId, m.eventId, m.eventType, m.requestId, m.jobId, m.permitId, JSON.stringify(m.payload)],
  );
}

export async function findMessage(db: Queryable, id: string): Promise<WebhookMessageRecord | null> {
  const { rows } = await db.query<WebhookMessageRecord>('SELECT * FROM webhook_messages WHERE id = $1', [id]);
  return rows[0] ?? null;
}

/** Records one attempt with its events, and the message's state, in one transaction (once per attempt number). */
export async function recordAttempt(
  db: Db,
  a: Omit<WebhookAttemptRecord, 'event_type'>,
  messageStatus: WebhookMessageRecord['status'],
  events: NewEvent[],
): Promise<void> {
  await withTransaction(db, async (c) => {
    const { rowCount } = await c.query(
      `INSERT INTO webhook_attempts (id, message_id, subscription_id, project_id, attempt, attempted_at, status_code, latency_ms, ok, error, response_body)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (message_id, attempt) DO NOTHING`,
      [a.id, a.message_id, a.subscription_id, a.project_id, a.attempt, a.attempted_at, a.status_code, a.latency_ms, a.ok, a.error, a.response_body],
    );
    if (!rowCount) return;
    await c.query(
      `UPDATE webhook_messages SET attempts = GREATEST(attempts, $2), status = $3, completed_at = CASE WHEN $3 = 'pending' THEN NULL ELSE now() END WHERE id = $1`,
      [a.message_id, a.attempt, messageStatus],
    );
    await appendEvents(c, events);
  });
}

export async function setMessageStatus(db: Queryable, id: string, status: WebhookMessageRecord['status']): Promise<void> {
  await db.query("UPDATE webhook_messages SET status = $2, completed_at = now() WHERE id = $1 AND status = 'pending'", [id, status]);
}

export async function listAttempts(db: Queryable, projectId: string, subscriptionId: string, q: { before?: { at: string; id: string }; limit: number }): Promise<(WebhookAttemptRecord & { cursor_ts: string })[]> {
  const { rows } = await db.query<WebhookAttemptRecord & { cursor_ts: string }>(
    `SELECT a.*, m.event_type, to_char(a.attempted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_ts
       FROM webhook_attempts a JOIN webhook_messages m ON m.id = a.message_id
      WHERE a.project_id = $1 AND a.subscription_id = $2
        AND ($3::timestamptz IS NULL OR (a.attempted_at, a.id) < ($3::timestamptz, $4::text))
      ORDER BY a.attempted_at DESC, a.id DESC LIMIT $5`,
    [projectId, subscriptionId, q.before?.at ?? null, q.before?.id ?? null, q.limit],
  );
  return rows;
}

export async function findAttempt(db: Queryable, messageId: string, attempt: number): Promise<WebhookAttemptRecord | null> {
  const { rows } = await db.query<WebhookAttemptRecord>(
    'SELECT a.*, m.event_type FROM webhook_attempts a JOIN webhook_messages m ON m.id = a.message_id WHERE a.message_id = $1 AND a.attempt = $2',
    [messageId, attempt],
  );
  return rows[0] ?? null;
}
