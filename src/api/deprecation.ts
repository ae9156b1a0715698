/**
 * Deprecation notices (spec, "Versioning" 5): a deprecated route keeps working and answers with
 * `Deprecation` (RFC 9745: a structured-field date, `@<epoch seconds>`), `Sunset` (RFC 8594: an
 * HTTP-date) and `Link` headers naming the deprecation notice (`rel="deprecation"`) and the
 * replacement (`rel="successor-version"`). Routes are deprecated in the route table
 * (src/api/route-table.ts) or, for operators and tests, through TOLLGATE_DEPRECATED_ROUTES.
 */
import type { Middleware } from 'koa';
import { z } from 'zod';

export const deprecationNoticeSchema = z
  .object({
    /** `METHOD /v1/path` exactly as the route table writes it (`:param` segments). */
    route: z.string().regex(/^(GET|POST|PATCH|DELETE) \/\S+$/, 'route must read "METHOD /v1/path"'),
    deprecated_at: z.iso.datetime({ offset: true }),
    sunset: z.iso.datetime({ offset: true }),
    /** The deprecation notice (changelog entry); the reference page when absent. */
    doc: z.string().min(1).optional(),
    /** The replacement route or its documentation. */
    successor: z.string().min(1).optional(),
  })
  .strict();

export type DeprecationNotice = z.infer<typeof deprecationNoticeSchema>;

/** TOLLGATE_DEPRECATED_ROUTES: a JSON array of notices; empty or unset means none. */
export const deprecatedRoutesEnvSchema = z
  .string()
  .default('')
  .transform((raw, ctx) => {
    if (!raw.trim()) return [];
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON array of {route, deprecated_at, sunset, doc?, successor?}' });
      return z.NEVER;
    }
    const parsed = z.array(deprecationNoticeSchema).safeParse(value);
    if (!parsed.success) {
      ctx.addIssue({ code: 'custom', message: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') });
      return z.NEVER;
    }
    return parsed.data;
  });

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
