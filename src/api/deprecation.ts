/**
 * Deprecation notices (spec, "Versioning" 5): a deprecated route keeps working and answers with
 * `Deprecation` (RFC 9745: a structured-field date, `@<epoch seconds>`), `Sunset` (RFC 8594: an
 * HTTP-date) and `Link` headers naming the deprecation notice (`rel="deprecation"`) and the
 * replacement (`rel="successor-version"`). Routes are deprecated in the route table
 * (src/api/route-table.ts) or, for operators and tests, through TOLLGATE_DEPRECATED_ROUTES
 * (parsed with the configuration: src/deprecation-notices.ts).
 */
import type { Middleware } from 'koa';
import type { DeprecationNotice } from '../deprecation-notices';

export type { DeprecationNotice };

export const DEFAULT_DEPRECATION_DOC = '/docs';

/** The header values of a notice (also used by the OpenAPI document's description of the route). */
export function deprecationHeaderValues(notice: Omit<DeprecationNotice, 'route'>): Record<string, string> {
  const links = [`<${notice.doc ?? DEFAULT_DEPRECATION_DOC}>; rel="deprecation"; type="text/html"`];
  if (notice.successor) links.push(`<${notice.successor}>; rel="successor-version"`);
  return {
    deprecation: `@${Math.floor(Date.parse(notice.deprecated_at) / 1000)}`,
    sunset: new Date(notice.sunset).toUTCString(),
    link: links.join(', '),
  };
}

/** Sets the headers before the route runs, so error answers (401, 400) carry them too. */
export function deprecationHeaders(notice: Omit<DeprecationNotice, 'route'>): Middleware {
  const headers = deprecationHeaderValues(notice);
  return async (ctx, next) => {
    for (const [k, v] of Object.entries(headers)) ctx.set(k, v);
    await next();
  };
}
