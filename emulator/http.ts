/**
 * What every emulated provider answers with: the request's context, JSON bodies, the provider's
 * native error body, delays that end when the caller hangs up, and an SSE writer that honours the
 * stream faults (./faults.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { providerModules } from '../src/providers';
import type { ProviderId } from '../src/providers/types';
import type { Faults } from './faults';

export interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  provider: ProviderId;
  path: string; // after the provider prefix, without query
  query: URLSearchParams;
  raw: Buffer;
  body: any;
  baseUrl: string;
  /** Aborted when the caller hangs up before the response finished (see `delay`). */
  hangUp?: AbortSignal;
}

/** A provider's route handler; it throws `unknownRoute(ctx)` for a path the provider does not serve. */
export type ProviderRoutes = (ctx: Ctx, faults: Faults) => Promise<unknown>;

export class HttpFail extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export const unknownRoute = (ctx: Ctx) => new HttpFail(404, `Unknown route ${ctx.req.method} ${ctx.path}`);

export const now = () => Math.floor(Date.now() / 1000);

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), ...headers });
  res.end(data);
}

export function sendError(ctx: Ctx, status: number, message: string, faults?: Faults) {
  const headers: Record<string, string> = {};
  if (status === 429) headers['retry-after'] = String(faults?.retryAfter ?? 1);
  sendJson(ctx.res, status, providerModules[ctx.provider].errorBody(status, message), headers);
}

/**
 * An emulated delay that ends early when the caller hangs up, as a provider stops working on a
 * request whose connection closed: no timer outlives the call (a test's process can exit).
 */
export function delay(ctx: Ctx, ms: number): Promise<void> {
  if (!ctx.hangUp) {
    const hungUp = new AbortController();
    if (ctx.req.socket.destroyed) hungUp.abort();
    else ctx.res.once('close', () => ctx.res.writableFinished || hungUp.abort());
    ctx.hangUp = hungUp.signal;
  }
  return sleep(ms, undefined, { signal: ctx.hangUp });
}

/** SSE writer honouring ttft, chunk delay and stream-break faults. */
export function sseWriter(ctx: Ctx, faults: Faults) {
  ctx.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  ctx.res.flushHeaders();
  let sent = 0;
  return {
    /** Writes one event; returns false (and kills the connection) when the break fault fires. */
    async write(data: string, event?: string): Promise<boolean> {
      if (sent === 0 && faults.ttftMs) await delay(ctx, faults.ttftMs);
      else if (faults.chunkDelayMs) await delay(ctx, faults.chunkDelayMs);
      if (faults.streamBreakAfter !== undefined && sent >= faults.streamBreakAfter) {
        ctx.res.socket?.destroy();
        return false;
      }
      // Wait for the event to reach the socket, so a later break cuts after it, not before.
      await new Promise<void>((resolve) => ctx.res.write(`${event ? `event: ${event}\n` : ''}data: ${data}\n\n`, () => resolve()));
      sent++;
      return true;
    },
    end: () => ctx.res.end(),
  };
}

/** A tool call's arguments in stream pieces (JSON has no word breaks to split on). */
export const slices = (s: string, n = 16): string[] => s.match(new RegExp(`[\\s\\S]{1,${n}}`, 'g')) ?? [''];
