/** A proxy request handed to the proxy surface: the connection's values, its key check and its body reader. */
import type { ParameterizedContext } from 'koa';
import type { ProviderId } from '../../config';
import type { ProxyRequest } from '../../proxy/request';
import type { KeyLookup } from '../key-cache';
import { authenticateNative } from './native-auth';

/** The raw body, or null once it grows past `limit` bytes (the rest is left unread). */
export async function readBodyUpTo(ctx: ParameterizedContext, limit: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of ctx.req) {
    size += (c as Buffer).length;
    if (size > limit) return null;
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

export function proxyRequest(ctx: ParameterizedContext, keys: KeyLookup, provider: ProviderId, nativePath: string): ProxyRequest {
  return {
    method: ctx.method,
    nativePath,
    querystring: ctx.querystring,
    headers: ctx.req.headers,
    authenticate: () => authenticateNative(ctx, keys, provider),
    readBody: (limit) => readBodyUpTo(ctx, limit),
  };
}
