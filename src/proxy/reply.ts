/** What a proxy answers: a native JSON reply, provider-native errors, and replays of stored responses. */
import type { ProviderId } from '../config';
import type { StoredResponse } from '../db/repositories/idempotency';
import { nativeErrorBody, ProxyError } from './native-errors';
import { FIREWALL_HEADER, GOVERNANCE_ACTIONS_HEADER } from './deps';

export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export function jsonReply(status: number, body: unknown, headers: Record<string, string> = {}): Reply {
  return { status, headers: { 'content-type': 'application/json', ...headers }, body: Buffer.from(JSON.stringify(body)) };
}

/**
 * What the HTTP side sends for a proxy call: the reply, and the ids a failed call carries, set
 * after the reply's own headers and body.
 */
export interface Outgoing {
  reply: Reply;
  ids?: Record<string, string>;
}

export function proxyErrorReply(provider: ProviderId, err: ProxyError): Reply {
  return jsonReply(err.status, nativeErrorBody(provider, { status: err.status, code: err.code, message: err.message, extra: err.extra }), err.headers);
}

/** A stored response replayed: status, the headers that matter, and the body (an SSE body is replayed whole). */
export function replayReply(stored: StoredResponse): Reply {
  return { status: stored.status, headers: { ...stored.headers, 'idempotent-replayed': 'true' }, body: stored.body };
}

/** Stored responses: everything except throttles and Tollgate/upstream-side failures (>= 500), which are retryable. */
export const cacheable = (status: number) => status < 500 && status !== 429;
export const STORED_HEADERS = ['content-type', 'x-svc-permit-id', 'x-svc-request-id', 'retry-after', 'x-svc-selected-provider', 'x-svc-selected-model', 'x-svc-fallback-occurred', GOVERNANCE_ACTIONS_HEADER, FIREWALL_HEADER];
export const storedHeaders = (h: Record<string, string>) => Object.fromEntries(STORED_HEADERS.filter((k) => h[k] !== undefined).map((k) => [k, h[k]]));

