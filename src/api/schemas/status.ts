import { z } from 'zod';

const readiness = z.enum(['ready', 'unavailable']);

export const statusSummarySchema = z
  .object({
    status: z.enum(['ready', 'degraded']),
    checked_at: z.iso.datetime(),
    components: z.object({ database: z.object({ status: readiness }), temporal: z.object({ status: readiness }) }),
    providers: z.array(
      z.object({
        provider: z.string(),
        status: z.enum(['configured', 'not_configured']),
        upstream: z.enum(['provider', 'custom_endpoint']),
      }),
    ),
  })
  .meta({ id: 'StatusSummary' });
