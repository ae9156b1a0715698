/**
 * Relays stream deltas from the dispatch activity (worker process) to the API process holding the
 * client connection, and control messages (client disconnect → abort) the other way, through
 * PostgreSQL LISTEN/NOTIFY: one channel per execution and direction, so API and worker may be
 * different processes or machines.
 *
 * Each process has one relay (one dedicated LISTEN connection, multiplexing every channel it
 * listens on). When the publisher and a subscriber share the relay instance (API and worker in one
 * process) and `inProcess` is on, messages are handed over directly without a database round trip.
 *
 * Ordering: a publisher sends its messages one after another on one pooled connection, so
 * PostgreSQL delivers them in order; each message also carries `seq` so a subscriber can detect gaps.
 */
import { Client, PoolClient } from 'pg';
import type { Db } from '../db/pool';
import type { Logger } from '../logger';

export type RelayMessage =
  | { seq: number; type: 'delta'; text: string }
  /** Last message of a stream: how many deltas were sent before it. */
  | { seq: number; type: 'end'; deltas: number }
  /** API → worker: the client went away; stop the upstream call. */
  | { seq: number; type: 'abort'; reason: string };

type Handler = (m: RelayMessage) => void;

export interface RelayPublisher {
  /** Queues a message; messages are delivered in the order they were queued. */
  send(m: DistributiveOmit<RelayMessage, 'seq'>): void;
  /** Resolves when every queued message was handed to PostgreSQL (or to local subscribers). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

type DistributiveOmit<T, K extends keyof never> = T extends unknown ? Omit<T, K> : never;

export interface StreamRelay {
  /** Listens on `channel` (resolves once LISTEN is active); returns the unsubscribe function. */
  subscribe(channel: string, handler: Handler): Promise<() => Promise<void>>;
  publisher(channel: string): RelayPublisher;
  close(): Promise<void>;
}

/** Channel names: lowercase, under PostgreSQL's 63-byte identifier limit. */
export function streamChannel(executionId: string): string {
  return `tgs_${executionId.replace(/[^a-z0-9]/gi, '').toLowerCase().slice(-48)}`;
}
export function controlChannel(executionId: string): string {
  return `tgc_${executionId.replace(/[^a-z0-9]/gi, '').toLowerCase().slice(-48)}`;
}

/** NOTIFY payloads are limited to 8000 bytes; long deltas are split. */
const MAX_TEXT_CHARS = 1500;

export function createStreamRelay(opts: { db: Db; databaseUrl: string; inProcess?: boolean; logger?: Logger }): StreamRelay {
  const inProcess = opts.inProcess ?? true;
  const handlers = new Map<string, Set<Handler>>();
  let listener: Client | null = null;
  let connecting: Promise<Client> | null = null;
  let closed = false;
  let chain: Promise<unknown> = Promise.resolve();

  const quote = (ch: string) => `"${ch.replace(/"/g, '""')}"`;

  function dispatch(channel: string, m: RelayMessage): void {
    const set = handlers.get(channel);
    if (!set) return;
    for (const h of [...set]) {
      try {
        h(m);
      } catch (err) {
        opts.logger?.warn({ err, channel }, 'stream relay handler failed');
      }
    }
  }

  async function getListener(): Promise<Client> {
    if (listener) return listener;
    if (!connecting) {
      connecting = (async () => {
        const c = new Client({ connectionString: opts.databaseUrl });
        c.on('notification', (n) => {
          if (!n.payload) return;
          try {
            dispatch(n.channel, JSON.parse(n.payload) as RelayMessage);
          } catch {
            /* not ours */
          }
        });
        c.on('error', (err) => {
          opts.logger?.warn({ err }, 'stream relay listener connection lost');
          if (listener === c) listener = null;
          c.end().catch(() => undefined);
        });
        await c.connect();
        // Channels subscribed while the previous connection was lost are listened on again.
        for (const ch of handlers.keys()) await c.query(`LISTEN ${quote(ch)}`);
        listener = c;
        return c;
      })().finally(() => {
        connecting = null;
      });
    }
    return connecting;
  }

  /** LISTEN/UNLISTEN statements run one at a time on the listener connection. */
  function serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = chain.then(fn, fn);
    chain = next.catch(() => undefined);
    return next;
  }

  return {
    async subscribe(channel, handler) {
      if (closed) throw new Error('stream relay closed');
      let set = handlers.get(channel);
      const first = !set;
      if (!set) handlers.set(channel, (set = new Set()));
      set.add(handler);
      if (first) {
        try {
          await serial(async () => (await getListener()).query(`LISTEN ${quote(channel)}`));
        } catch (err) {
          set.delete(handler);
          if (set.size === 0) handlers.delete(channel);
          throw err;
        }
      }
      return async () => {
        const s = handlers.get(channel);
        if (!s) return;
        s.delete(handler);
        if (s.size > 0) return;
        handlers.delete(channel);
        if (!listener || closed) return;
        await serial(async () => listener?.query(`UNLISTEN ${quote(channel)}`)).catch(() => undefined);
      };
    },

    publisher(channel) {
      let seq = 0;
      let client: PoolClient | null = null;
      let pending: Promise<void> = Promise.resolve();
      let failed: unknown = null;
      const notify = async (payload: string) => {
        if (!client) client = await opts.db.connect();
        await client.query('SELECT pg_notify($1, $2)', [channel, payload]);
      };
      const enqueue = (m: RelayMessage) => {
        if (inProcess && handlers.has(channel)) {
          // Same process as the subscriber: hand the message over in order, no database trip.
          pending = pending.then(() => dispatch(channel, m));
          return;
        }
        const payload = JSON.stringify(m);
        pending = pending.then(() => notify(payload)).catch((err) => {
          failed ??= err;
        });
      };
      return {
        send(m) {
          if (m.type === 'delta' && m.text.length > MAX_TEXT_CHARS) {
            for (let i = 0; i < m.text.length; i += MAX_TEXT_CHARS) {
              enqueue({ seq: ++seq, type: 'delta', text: m.text.slice(i, i + MAX_TEXT_CHARS) });
            }
            return;
          }
          enqueue({ ...m, seq: ++seq } as RelayMessage);
        },
        async flush() {
          await pending;
          if (failed) opts.logger?.warn({ err: failed, channel }, 'stream relay publish failed');
        },
        async close() {
          await pending.catch(() => undefined);
          if (client) {
            client.release();
            client = null;
          }
        },
      };
    },

    async close() {
      closed = true;
      handlers.clear();
      const l = listener ?? (connecting ? await connecting.catch(() => null) : null);
      listener = null;
      if (l) await l.end().catch(() => undefined);
    },
  };
}
