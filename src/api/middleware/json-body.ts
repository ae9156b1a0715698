import { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import { ApiError } from '../errors';
import { jsonDepth, MAX_JSON_DEPTH } from '../json-depth';

/**
 * JSON request bodies for the `/v1` JSON routes: a body with another content type is a 415,
 * malformed JSON or JSON nested deeper than MAX_JSON_DEPTH a 400 `invalid_json`, an oversized body a
 * 413 (mapped in the error handler).
 */
export function jsonBody(limitBytes: number): Middleware {
  const parse = koaBody({
    json: true,
    jsonStrict: true,
    jsonLimit: limitBytes,
    urlencoded: false,
    text: false,
    multipart: false,
    patchKoa: true,
    patchNode: false,
  });
  return async (ctx, next) => {
    // Proxy routes forward the provider-native body byte for byte; they read it themselves.
    if (ctx.path.startsWith('/v1/proxy/')) {
      await next();
      return;
    }
    if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(ctx.method) && hasBody(ctx.req.headers)) {
      if (!ctx.is('application/json', 'application/*+json')) {
        throw new ApiError(415, 'unsupported_media_type', 'Send the request body as JSON with "Content-Type: application/json"', {
          content_type: ctx.get('content-type') || null,
        });
      }
      await parse(ctx, async () => {
        if (jsonDepth(ctx.request.body) > MAX_JSON_DEPTH) {
          throw new ApiError(400, 'invalid_json', `The request body nests deeper than ${MAX_JSON_DEPTH} levels`, { max_depth: MAX_JSON_DEPTH });
        }
        await next();
      });
      return;
    }
    ctx.request.body = undefined;
    await next();
  };
}

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = headers['content-length'];
  return length !== undefined && length !== '0';
}
