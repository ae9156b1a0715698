import type { ProviderId } from '../../config';
import { handleProxy, PROXY_PROVIDERS, type ProxyDeps } from '../../proxy/service';
import { createUpstreamClient } from '../../proxy/upstream';
import { createReadCounter, handleProxyRead, readRouteOf, unsupportedPath } from '../../proxy/reads';
import type { ApiDeps } from '../deps';
import { proxyRequest } from '../proxy/request';
import { send, streamSink } from '../proxy/response';
import { routeFamily, type RouteContext, type RouteDef, type Stability } from '../route-table';

/** The spec numbers providers in Tollgate's provider order: openai, anthropic, google, deepseek, mistral. */
const PROXY_TIERS: Record<ProviderId, { stability: Stability; since: string }> = {
  openai: { stability: 'GA', since: 'v1.0' },
  anthropic: { stability: 'GA', since: 'v1.1' },
  google: { stability: 'Beta', since: 'v1.4' },
  deepseek: { stability: 'Beta', since: 'v1.5' },
  mistral: { stability: 'Beta', since: 'v1.4' },
};

function proxyContext(deps: ApiDeps) {
  let proxy: ProxyDeps | null = null;
  // Built on first use: the upstream pools and the gateway exist only in processes that proxy.
  const proxyDeps = (): ProxyDeps => {
    if (!proxy) {
      const { db, config, logger, clock, genAi, providers, calls, intentReservations } = deps;
      proxy = { db, config, logger, clock, genAi, providers, calls, intentReservations, upstream: createUpstreamClient(config.providerTimeouts) };
      const built = proxy;
      deps.onClose(async () => {
        await built.upstream.close();
      });
    }
    return proxy;
  };
  return { proxyDeps, keys: deps.keys, reads: createReadCounter(deps.metrics) };
}
type ProxyContext = ReturnType<typeof proxyContext>;

const nativePath = (ctx: RouteContext, provider: ProviderId) => ctx.path.slice(`/v1/proxy/${provider}`.length);

/**
 * Provider proxies: POST /v1/proxy/{provider}/<native path> for openai, anthropic, google,
 * deepseek and mistral. `/v1/proxy/{provider}` stands in for the provider's host, so an SDK's base
 * URL is `{base}/v1/proxy/openai/v1`, `{base}/v1/proxy/anthropic`, `{base}/v1/proxy/google`,
 * `{base}/v1/proxy/deepseek`, `{base}/v1/proxy/mistral`. See src/proxy/service.ts. Bodies and
 * errors are provider-native; the key is checked where each provider's SDK sends it
 * (src/api/proxy/native-auth.ts), when the proxy asks, so its refusals are provider-shaped 401s.
 */
function providerRoutes(provider: ProviderId): RouteDef<ProxyContext>[] {
  const pattern = new RegExp(`^/v1/proxy/${provider}(/.*)$`);
  const path = `/v1/proxy/${provider}/:native_path`;
  // Model lists and details, stored responses: authenticated, forwarded, not governed (src/proxy/reads.ts).
  const readOnly = async (ctx: RouteContext, { proxyDeps, keys, reads }: ProxyContext) => {
    const native = nativePath(ctx, provider);
    const read = readRouteOf(provider, ctx.method, native);
    if (read) return send(ctx, { reply: await handleProxyRead(proxyDeps(), reads, { provider, route: read }, proxyRequest(ctx, keys, provider, native)) });
    send(ctx, { reply: unsupportedPath(provider, ctx.method, native) });
  };
  return [
    {
      method: 'post',
      path,
      pattern,
      ...PROXY_TIERS[provider],
      auth: 'native',
      nativeErrors: true,
      summary: `Governed pass-through to ${provider} (provider-native request and response)`,
      handler: async (ctx, { proxyDeps, keys, reads }) => {
        const native = nativePath(ctx, provider);
        const request = proxyRequest(ctx, keys, provider, native);
        const read = readRouteOf(provider, 'POST', native);
        if (read) return send(ctx, { reply: await handleProxyRead(proxyDeps(), reads, { provider, route: read }, request) });
        const out = await handleProxy(proxyDeps(), provider, request, streamSink(ctx));
        if (out) send(ctx, out);
      },
    },
    { method: 'get', path, pattern, stability: 'Beta', auth: 'native', nativeErrors: true, summary: `Pass-through read routes of ${provider} (for example models)`, handler: readOnly },
    { method: 'delete', path, pattern, stability: 'Beta', auth: 'native', nativeErrors: true, summary: `Pass-through delete routes of ${provider}`, handler: readOnly },
  ];
}

export const proxyRoutes = routeFamily('Proxies', proxyContext, PROXY_PROVIDERS.flatMap((p) => providerRoutes(p)));
