import Router from '@koa/router';
import type { ProviderId } from '../../config';
import { handleProxy, PROXY_PROVIDERS, type ProxyDeps } from '../../proxy/service';
import { createUpstreamClient } from '../../proxy/upstream';
import { createReadCounter, handleProxyRead, readRouteOf, unsupportedPath } from '../../proxy/reads';
import { ApiDeps } from '../deps';

/**
 * Provider proxies: POST /v1/proxy/{provider}/<native path> for openai, anthropic, google,
 * deepseek and mistral. `/v1/proxy/{provider}` stands in for the provider's host, so an SDK's base
 * URL is `{base}/v1/proxy/openai/v1`, `{base}/v1/proxy/anthropic`, `{base}/v1/proxy/google`,
 * `{base}/v1/proxy/deepseek`, `{base}/v1/proxy/mistral`. See src/proxy/service.ts.
 */
export function registerProxyRoutes(router: Router, deps: ApiDeps): void {
  let proxy: ProxyDeps | null = null;
  // Built on first use: the upstream pools and the gateway exist only in processes that proxy.
  const proxyDeps = (): ProxyDeps => {
    if (!proxy) {
      proxy = { api: deps, upstream: createUpstreamClient(deps.config.providerTimeouts) };
      const built = proxy;
      deps.onClose?.(async () => {
        await built.upstream.close();
      });
    }
    return proxy;
  };
  const reads = createReadCounter(deps.metrics);
  const pattern = new RegExp(`^/v1/proxy/(${PROXY_PROVIDERS.join('|')})(/.*)$`);
  router.post(pattern, async (ctx) => {
    const m = pattern.exec(ctx.path)!;
    const provider = m[1] as ProviderId;
    const read = readRouteOf(provider, 'POST', m[2]);
    if (read) return handleProxyRead(ctx, proxyDeps(), reads, provider, m[2], read);
    await handleProxy(ctx, proxyDeps(), provider, m[2]);
  });
  // Model lists and details, stored responses: authenticated, forwarded, not governed (src/proxy/reads.ts).
  const readOnly = async (ctx: Parameters<Parameters<typeof router.get>[1]>[0]) => {
    const m = pattern.exec(ctx.path)!;
    const provider = m[1] as ProviderId;
    const read = readRouteOf(provider, ctx.method, m[2]);
    if (read) return handleProxyRead(ctx, proxyDeps(), reads, provider, m[2], read);
    unsupportedPath(ctx, provider, m[2]);
  };
  router.get(pattern, readOnly);
  router.delete(pattern, readOnly);
}
