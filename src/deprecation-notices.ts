/**
 * Deprecation notices as configuration reads them (TOLLGATE_DEPRECATED_ROUTES): what each one
 * names. The headers a deprecated route answers with are the API's (src/api/deprecation.ts).
 */
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
