import { z } from 'zod';

/**
 * A request-level failure, rendered as `{"error": {"code", "message", "details"}}` with `status`.
 * Execution outcomes (denied, failed) are not ApiErrors: they stay inside the execution envelope.
 */
export class ApiError extends Error {
  readonly details: Record<string, unknown>;
  /** Response headers the error carries (`www-authenticate`, `retry-after`). */
  readonly headers: Record<string, string>;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    extra: { details?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.details = extra.details ?? {};
    this.headers = extra.headers ?? {};
  }

  toBody(): { error: { code: string; message: string; details: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

export const errors = {
  validation: (issues: { path: string; message: string; code?: string }[]) =>
    new ApiError(
      400,
      'validation_error',
      `Invalid request: ${issues.map((i) => `${i.path || '(body)'}: ${i.message}`).join('; ')}`,
      { details: { issues } },
    ),
  notFound: (what: string, id?: string) =>
    new ApiError(404, 'not_found', `${what} not found`, { details: id === undefined ? {} : { id } }),
  conflict: (code: string, message: string, details: Record<string, unknown> = {}) =>
    new ApiError(409, code, message, { details }),
  idempotencyConflict: (key: string) =>
    new ApiError(
      409,
      'idempotency_conflict',
      'This Idempotency-Key was already used with a different request payload',
      { details: { idempotency_key: key } },
    ),
  forbidden: (code: string, message: string, details: Record<string, unknown> = {}) =>
    new ApiError(403, code, message, { details }),
  internal: () => new ApiError(500, 'internal_error', 'An internal error occurred; retry later'),
};

/** Formats a zod error into the details list: one entry per offending field path. */
export function zodIssues(error: z.ZodError, prefix = ''): { path: string; message: string; code: string }[] {
  return error.issues.map((i) => ({
    path: [prefix, ...i.path.map(String)].filter(Boolean).join('.'),
    message: i.message,
    code: i.code,
  }));
}

/** Parses `input` with `schema` or throws a 400 validation_error naming every bad field. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, prefix = ''): z.infer<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw errors.validation(zodIssues(result.error, prefix));
  return result.data;
}
