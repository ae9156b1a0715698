import { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import { ApiError } from '../errors';
import { jsonDepth, MAX_JSON_DEPTH } from '../../json-depth';
import { readModelJson } from './model-json';


/** Payment-provider webhooks (src/api/routes/billing.ts): their signature covers the exact bytes, so they read the raw body. */
const BILLING_WEBHOOK_PATH = /^\/v1\/billing\/[^/]+\/webhook\/?$/;

/** Routes whose body carries model input (prompts, documents): the full body limit. The proxies read their own body under it. */
const MODEL_INPUT_ROUTES = new Set(['POST /v1/executions', 'POST /v1/execute', 'POST /v1/jobs']);

export function isModelInputRoute(method: string, path: string): boolean {
  return MODEL_INPUT_ROUTES.has(`${method} ${path.replace(/\/+$/, '')}`) || path.startsWith('/v1/proxy/');
}

const parser = (limitBytes: number) =>
  koaBody({
    json: true,
    jsonStrict: true,
    jsonLimit: limitBytes,
    urlencoded: false,
    text: false,
    multipart: false,
    patchKoa: true,
    patchNode: false,
  });

/**
 * JSON request bodies for the `/v1` JSON routes (model-input bodies read by model-json.ts, the others by koa-body): a body with another content type is a 415,
 * malformed JSON or JSON nested deeper than MAX_JSON_DEPTH a 400 `invalid_json`, an oversized body a
 * 413 (mapped in the error handler). Model-input routes take up to `limitBytes`, every other route
 * up to `controlLimitBytes` (docs/decisions/http-hardening.md).
 */
export function jsonBody(limitBytes: number, controlLimitBytes = limitBytes): Middleware {
  const modelParse = parser(limitBytes);
  const controlParse = parser(Math.min(limitBytes, controlLimitBytes));
  return async (ctx, next) => {
    // Proxy routes forward the provider-native body byte for byte, and a payment provider's webhook
    // signature covers the exact bytes: they read the body themselves.
    if (ctx.path.startsWith('/v1/proxy/') || BILLING_WEBHOOK_PATH.test(ctx.path)) {
      await next();
      return;
    }
    if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(ctx.method) && hasBody(ctx.req.headers)) {
      if (!ctx.is('application/json', 'application/*+json')) {
        throw new ApiError(415, 'unsupported_media_type', 'Send the request body as JSON with "Content-Type: application/json"', { details: { content_type: ctx.get('content-type') || null } });
      }
      const modelInput = isModelInputRoute(ctx.method, ctx.path);
      // Compressed bodies (rare on these routes) are inflated by koa-body's reader.
      if (modelInput && (ctx.get('content-encoding') || 'identity').toLowerCase() === 'identity') {
        ctx.request.body = (await readModelJson(ctx.req, limitBytes)) as typeof ctx.request.body;
        await next();
        return;
      }
      const parse = modelInput ? modelParse : controlParse;
      await parse(ctx, async () => {
        if (jsonDepth(ctx.request.body) > MAX_JSON_DEPTH) {
          throw new ApiError(400, 'invalid_json', `The request body nests deeper than ${MAX_JSON_DEPTH} levels`, { details: { max_depth: MAX_JSON_DEPTH } });
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
