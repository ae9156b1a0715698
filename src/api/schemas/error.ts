import { z } from 'zod';

/** The spec's error shape ("Error contract"): every request-level failure outside the proxies. */
export const errorSchema = z
  .object({
    error: z.object({
      code: z.string().meta({ example: 'validation_error' }),
      message: z.string().meta({ example: 'The request body is invalid' }),
      details: z.record(z.string(), z.unknown()).meta({ example: { issues: [{ path: 'model', message: 'Required', code: 'invalid_type' }] } }),
    }),
  })
  .meta({
    id: 'Error',
    description: 'Request-level failure: transport, validation, auth, not-found, conflict (spec, "Error contract")',
    example: { error: { code: 'invalid_api_key', message: 'The API key is not valid', details: {} } },
  });
