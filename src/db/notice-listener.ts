/**
 * A dedicated connection that LISTENs on one PostgreSQL channel and comes back after it is lost
 * (every `retryMs`). Caches that are invalidated by notices (API keys, project provider keys,
 * intent lease revocations) use it; while it is down, `listening` is false and they must not trust
 * what they hold: `onLost` runs first, and `onListening` runs once LISTEN is in effect again
 * (anything cached before that may have missed a notice).
 */
import { Client } from 'pg';
import type { Logger } from '../logger';

export interface NoticeListener {
  readonly listening: boolean;
  close(): Promise<void>;
}

/** Announces API key, plan and provider key changes per project (payload: the project id; migrations 0101, 0131). */
export const AUTH_CHANGES_CHANNEL = 'tollgate_auth_changes';

export interface NoticeHandlers {
  onNotice(payload: string): void;
  onListening?(): void;
  onLost?(): void;
}

/** One listening connection shared by every cache of the process that follows the channel. */
export interface NoticeChannel extends NoticeListener {
  /** Adds a subscriber; returns its unsubscribe. */
  subscribe(handlers: NoticeHandlers): () => void;
}

export function openNoticeChannel(opts: { databaseUrl: string; channel: string; logger?: Logger; lostMessage: string; retryMs?: number }): NoticeChannel {
  const subscribers = new Set<NoticeHandlers>();
  const listener = listenForNotices({
    ...opts,
    onNotice: (payload) => subscribers.forEach((s) => s.onNotice(payload)),
    onListening: () => subscribers.forEach((s) => s.onListening?.()),
    onLost: () => subscribers.forEach((s) => s.onLost?.()),
  });
  return {
    get listening() {
      return listener.listening;
    },
    subscribe(handlers) {
      subscribers.add(handlers);
      return () => void subscribers.delete(handlers);
    },
    close: () => listener.close(),
  };
}

export function listenForNotices(opts: {
  databaseUrl: string;
  channel: string;
  onNotice(payload: string): void;
  onListening?(): void;
  onLost?(): void;
  logger?: Logger;
  /** Logged (with the error) when the connection is lost. */
  lostMessage: string;
  retryMs?: number;
}): NoticeListener {
  const retryMs = opts.retryMs ?? 2_000;
  let listening = false;
  let closed = false;
  let client: Client | null = null;
  let retry: NodeJS.Timeout | null = null;

  async function listen(): Promise<void> {
    if (closed) return;
    const c = new Client({ connectionString: opts.databaseUrl });
    const lost = (err?: Error) => {
      if (client !== c) return;
      listening = false;
      client = null;
      opts.onLost?.();
      c.end().catch(() => undefined);
      if (!closed) {
        if (err) opts.logger?.warn({ err }, opts.lostMessage);
        retry = setTimeout(() => void listen(), retryMs);
        retry.unref?.();
      }
    };
    client = c;
    c.on('error', lost);
    c.on('end', () => lost());
    c.on('notification', (n) => {
      if (n.channel === opts.channel && n.payload) opts.onNotice(n.payload);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${opts.channel}`);
      opts.onListening?.();
      listening = true;
    } catch (err) {
      lost(err as Error);
    }
  }
  void listen();

  return {
    get listening() {
      return listening;
    },
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      const c = client;
      client = null;
      listening = false;
      await c?.end().catch(() => undefined);
    },
  };
}
