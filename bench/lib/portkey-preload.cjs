/**
 * Preloaded into the Portkey gateway child (`node --require bench/lib/portkey-preload.cjs …`).
 *
 * Works around a known Portkey bug that breaks every streamed chat completion on Node with the
 * dependencies npm resolves for @portkey-ai/gateway@1.15.2 (`@hono/node-server` ^1.3.3 → 1.19.x;
 * Portkey's own lockfile pins 1.13.5): the gateway answers `{"status":"failure","message":"Something
 * went wrong"}` and logs `tryTargetsRecursively error: immutable … TypeError: immutable at
 * updateHeaders` (Portkey-AI/gateway issues #1389 and #1550). The cause: hono's lightweight
 * `Response` keeps the upstream fetch response's `Headers` object when Portkey builds
 * `new Response(stream, upstreamResponse)`, and those headers are immutable, so Portkey's
 * `headers.append('x-portkey-…')` throws.
 *
 * The fix here only gives upstream responses mutable headers: every `fetch` answer is re-wrapped
 * in a Response with a copied `Headers` (same status, body stream, headers). Portkey's own code
 * path is otherwise unchanged; the cost is one object per upstream call.
 */
'use strict';

const realFetch = globalThis.fetch;
// Captured before @hono/node-server replaces the global Response with its own class.
const RealResponse = globalThis.Response;
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

globalThis.fetch = async function fetchWithMutableHeaders(input, init) {
  const res = await realFetch(input, init);
  return new RealResponse(NULL_BODY.has(res.status) ? null : res.body, {
    status: res.status,
    statusText: res.statusText,
    headers: new Headers(res.headers),
  });
};
